/* Whole files the commands read as text: prompts, grammars, JSON schemas, saved chats,
 * calibration text. One reader, so every command says the same thing about a bad path. */
#ifndef HR_CLI_TEXT_FILE_H
#define HR_CLI_TEXT_FILE_H
#include <stddef.h>
#include "util/err.h"

/* Reads path into a malloc'd buffer with a NUL after its *len bytes. max > 0 refuses a file
 * longer than max bytes. On failure NULL, and e says why: "cannot read 'PATH': REASON",
 * "'PATH' is a directory", "'PATH' is over the limit of N bytes" or out of memory. Pipes and
 * other unseekable files are read to their end. */
char *hr_text_file(const char *path, size_t max, size_t *len, hr_err *e);
#endif
