/* The chat page (server/web/index.html), embedded at build time (embed.cmake). */
#ifndef HR_SRV_WEB_PAGE_H
#define HR_SRV_WEB_PAGE_H
#include <stddef.h>
extern const unsigned char hr_web_index_html[];
extern const size_t hr_web_index_html_len;
#endif
