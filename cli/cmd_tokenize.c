/* PLACEHOLDER: being written; replace this whole file. */
#include <stdio.h>
#include "cli.h"

int hr_cmd_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hearth tokenize: not built yet\n");
    return 1;
}
