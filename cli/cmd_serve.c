/* hearth serve (being written). */
#include <stdio.h>
#include "cli.h"

int hr_cmd_serve(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "hearth serve: not available yet\n");
    return 1;
}
