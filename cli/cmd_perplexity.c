/* PLACEHOLDER: being written; replace this whole file. */
#include <stdio.h>
#include "cli.h"

int hr_cmd_perplexity(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hearth perplexity: not built yet\n");
    return 1;
}
