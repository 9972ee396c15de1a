/* PLACEHOLDER: being written; replace this whole file. */
#include <stdio.h>
#include "cli.h"

int hr_cmd_inspect(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hearth inspect: not built yet\n");
    return 1;
}
