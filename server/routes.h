/* Routing: path and method to a handler; 404 and 405 otherwise; API key check. */
#ifndef HR_SRV_ROUTES_H
#define HR_SRV_ROUTES_H
#include "http.h"

enum MHD_Result hr_route(hr_http_req *r);

/* Handlers (api_*.c). */
enum MHD_Result hr_api_completions(hr_http_req *r);
enum MHD_Result hr_api_chat(hr_http_req *r);
enum MHD_Result hr_api_models(hr_http_req *r);
enum MHD_Result hr_api_embeddings(hr_http_req *r);
enum MHD_Result hr_api_embedding(hr_http_req *r);
enum MHD_Result hr_api_props(hr_http_req *r);
enum MHD_Result hr_api_health(hr_http_req *r);
enum MHD_Result hr_api_metrics(hr_http_req *r);
enum MHD_Result hr_api_page(hr_http_req *r);
#endif
