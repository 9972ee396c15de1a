/* Stop texts over a stream of generated text: never lets out a partial stop text.
 * Text that could still become the start of a stop is held back until it cannot. */
#ifndef HR_SRV_STOPS_H
#define HR_SRV_STOPS_H
#include <stdbool.h>
#include <stddef.h>

typedef struct hr_stopper {
    char *const *stops;
    int n_stops;
    char *buf; /* text not yet let out */
    size_t len, cap;
} hr_stopper;

/* Appends text. *emit: how many bytes at the start of buf are safe to send now;
 * *hit: a stop text was found (buf[0..*emit) is what precedes it; the rest is dropped).
 * Returns -1 when out of memory. */
int hr_stop_feed(hr_stopper *s, const char *text, size_t n, size_t *emit, bool *hit);
/* Drops the first n bytes of buf (after sending them). */
void hr_stop_consume(hr_stopper *s, size_t n);
void hr_stop_free(hr_stopper *s);
#endif
