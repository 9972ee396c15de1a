/* hearth chat (being written). */
#include <stdio.h>
#include "cli.h"

int hr_cmd_chat(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "hearth chat: not available yet\n");
    return 1;
}
