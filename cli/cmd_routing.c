/* hearth routing TRACE: replays a routing trace (hearth run --dump-routing) through the
 * expert-cache policies at several slot counts and prints their hit rates, to choose
 * --moe-cache and --moe-cache-policy for a workload without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "sparse/routing_trace.h"
#include "sparse/trace_cache.h"

static void help(void) {
    printf("usage: hearth routing TRACE [flags]\n"
           "Replays a routing trace (hearth run --dump-routing TRACE) through expert caches of each slot\n"
           "count and policy and prints the share of routings (token x chosen expert) a ready slot\n"
           "serves, as --moe-cache N --moe-cache-policy P would on the device (docs/hybrid.md).\n\n"
           "  --slots N[,N...]   slots per layer (default: 1/8, 1/4 and 1/2 of the experts)\n"
           "  --policy P         lru, lfru, static or all (default all; static here is the oracle:\n"
           "                     each layer's most routed experts of the whole trace)\n"
           "  --lag L            evaluations of a layer a refill takes to become usable (default 1:\n"
           "                     by the next token, as the stand-in's synchronous copies)\n"
           "  --json             one JSON object per line\n");
}

typedef struct opts {
    const char *path;
    int32_t slots[16];
    int n_slots, lag, policy; /* policy -1: all */
    bool json;
} opts;

static int parse_slots(const char *v, opts *o) {
    o->n_slots = 0;
    for (const char *p = v; *p && o->n_slots < 16;) {
        char *end;
        const long n = strtol(p, &end, 10);
        if (end == p || n < 0 || n > 65536 || (*end && *end != ',')) return hr_usage_error("routing", "--slots: '%s' is not a list of counts", v);
        o->slots[o->n_slots++] = (int32_t)n;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int parse(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return help(), 3;
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (a[0] == '-' && a[1]) {
            if (strcmp(a, "--slots") && strcmp(a, "--policy") && strcmp(a, "--lag")) return hr_usage_error("routing", "unknown flag %s", a);
            if (!hr_arg_need("routing", argc, argv, i)) return 2;
            const char *v = argv[++i];
            if (!strcmp(a, "--slots")) {
                if (parse_slots(v, o)) return 2;
            } else if (!strcmp(a, "--lag")) {
                if (!hr_arg_long("routing", a, v, 1, 1 << 20, &l)) return 2;
                o->lag = (int)l;
            } else if (strcmp(v, "all") && (o->policy = hr_cache_policy_parse(v)) < 0)
                return hr_usage_error("routing", "--policy: '%s' is not one of lru, lfru, static, all", v);
            else if (!strcmp(v, "all")) o->policy = -1;
            continue;
        }
        if (o->path) return hr_usage_error("routing", "one trace at a time (%s and %s)", o->path, a);
        o->path = a;
    }
    return o->path ? 0 : hr_usage_error("routing", "no trace given");
}

int hr_cmd_routing(int argc, char **argv) {
    opts o = {.lag = 1, .policy = -1};
    const int pr = parse(argc, argv, &o);
    if (pr) return pr == 3 ? 0 : pr;
    hr_rtrace t;
    hr_err e = {{0}};
    if (hr_rtrace_read(o.path, &t, &e)) return fprintf(stderr, "hearth routing: %s\n", e.msg), 1;
    if (!o.n_slots) {
        const int32_t d[3] = {t.n_expert / 8, t.n_expert / 4, t.n_expert / 2};
        for (int i = 0; i < 3; i++)
            if (d[i] > 0 && (!o.n_slots || o.slots[o.n_slots - 1] != d[i])) o.slots[o.n_slots++] = d[i];
    }
    if (!o.json)
        printf("trace %s: %lld evaluations of %d layers, %d experts, %d used per token; lag %d\nslots  policy  hit rate  decode hit rate  refills\n",
               o.path, (long long)t.n_rec, t.n_layer, t.n_expert, t.k, o.lag);
    int rc = 0;
    for (int s = 0; s < o.n_slots && !rc; s++)
        for (int p = 0; p < HR_CACHE_POLICY_COUNT && !rc; p++) {
            if (o.policy >= 0 && p != o.policy) continue;
            hr_cache_sim r;
            const int32_t n = o.slots[s] < t.n_expert ? o.slots[s] : t.n_expert;
            if ((rc = hr_cache_simulate(&t, (hr_cache_policy)p, n, t.k, o.lag, NULL, &r, &e))) break;
            const double hit = r.lookups ? (double)r.hits / (double)r.lookups : 0;
            const double dhit = r.decode_lookups ? (double)r.decode_hits / (double)r.decode_lookups : 0;
            if (o.json)
                printf("{\"slots\":%d,\"policy\":\"%s\",\"lag\":%d,\"lookups\":%llu,\"hits\":%llu,\"hit_rate\":%.6f,"
                       "\"decode_lookups\":%llu,\"decode_hits\":%llu,\"decode_hit_rate\":%.6f,\"refills\":%llu}\n",
                       n, hr_cache_policy_name((hr_cache_policy)p), o.lag, (unsigned long long)r.lookups,
                       (unsigned long long)r.hits, hit, (unsigned long long)r.decode_lookups,
                       (unsigned long long)r.decode_hits, dhit, (unsigned long long)r.refills);
            else
                printf("%5d  %-6s  %7.2f%%  %14.2f%%  %llu\n", n, hr_cache_policy_name((hr_cache_policy)p), 100 * hit,
                       100 * dhit, (unsigned long long)r.refills);
        }
    if (rc) fprintf(stderr, "hearth routing: %s\n", e.msg);
    hr_rtrace_free(&t);
    return rc ? 1 : 0;
}
