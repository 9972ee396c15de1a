/* Stop texts per family, and the scan that decides how much of a streamed reply is safe
 * to show while a stop text might still be forming at its end. */
#include <string.h>
#include "chat/chat.h"
#include "chat/families.h"

const char *const *hr_chat_stops(hr_chat_tmpl t) {
    static const char *const none[] = {NULL};
    return (unsigned)t < HR_CHAT_COUNT ? hr_chat_family_of(t)->stops : none;
}

/* Length of the longest proper prefix of stop that text ends with. */
static size_t partial_tail(const char *text, size_t len, const char *stop) {
    size_t n = strlen(stop);
    for (size_t k = n ? n - 1 : 0; k > 0; k--)
        if (k <= len && !memcmp(text + len - k, stop, k)) return k;
    return 0;
}

size_t hr_chat_stop_scan(const char *const *stops, const char *text, size_t len, bool *stopped) {
    size_t first = len, hold = 0;
    for (size_t s = 0; stops && stops[s]; s++) {
        size_t n = strlen(stops[s]);
        for (size_t i = 0; n && n <= len && i + n <= first; i++)
            if (!memcmp(text + i, stops[s], n)) {
                first = i;
                break;
            }
        size_t k = partial_tail(text, len, stops[s]);
        if (k > hold) hold = k;
    }
    *stopped = first < len;
    return *stopped ? first : len - hold;
}
