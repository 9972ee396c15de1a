/* A small line editor for the interactive prompts of hearth chat: raw terminal mode through
 * termios, no library. Keys: Left/Right (Ctrl-B/F), Home/End (Ctrl-A/E), Alt-B/F and
 * Ctrl-Left/Right by word, Backspace, Delete, Ctrl-D (delete, or end of input on an empty
 * line), Ctrl-U/K (delete to the start/end), Ctrl-W and Alt-Backspace (the word before the
 * cursor), Up/Down (Ctrl-P/N) through the history, Ctrl-L (clear the screen), Ctrl-C. Cursor
 * movement steps over whole UTF-8 characters and counts East Asian wide characters as two
 * columns. Bracketed paste: a newline inside a paste ends the line with HR_LE_PASTED instead of
 * submitting it, so a pasted block becomes one multi-line message. Lines wider than the
 * terminal scroll horizontally. Use it only when the input is a terminal. */
#ifndef HR_LINEEDIT_H
#define HR_LINEEDIT_H
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <termios.h>

enum {
    HR_LE_LINE = 0,    /* Enter: the line is complete */
    HR_LE_PASTED = 1,  /* a newline inside a bracketed paste: the line continues the message */
    HR_LE_EOF = -1,    /* Ctrl-D on an empty line, or the input ended */
    HR_LE_INTR = -2,   /* Ctrl-C: *line holds the discarded text (empty if there was none) */
    HR_LE_ERROR = -3,  /* out of memory or a read error */
};

typedef struct hr_lineedit {
    int in, out;                   /* file descriptors of the terminal */
    const char *color, *color_end; /* SGR sequences around the typed text ("" for none) */
    char **hist;                   /* oldest first */
    size_t n_hist, cap_hist;
    char *hist_path;               /* the file the history persists in (hr_le_history_persist), or NULL */
    bool in_paste;                 /* inside a bracketed paste (it can span several lines) */
    bool skip_lf;                  /* a '\r' ended the last line: drop a '\n' right after it */
    bool raw;                      /* the terminal is in raw mode; saved: its settings before */
    struct termios saved;
    /* Set by the caller's SIGTERM/SIGHUP handler (installed without SA_RESTART): a read it
     * interrupts ends like end of input, with the terminal restored. NULL: none. */
    volatile sig_atomic_t *stop;
} hr_lineedit;

/* Most lines the history keeps (the oldest go first). */
#define HR_LE_HISTORY_MAX 256

void hr_le_init(hr_lineedit *le, int in, int out);
/* Reads one line after printing prompt (plain ASCII). On HR_LE_LINE, HR_LE_PASTED and
 * HR_LE_INTR, *line is a malloc'd NUL-terminated string without the newline (the caller
 * frees it) and *len its length. Non-empty lines ending in Enter enter the history. */
int hr_le_read(hr_lineedit *le, const char *prompt, char **line, size_t *len);
/* Appends a line to the history unless it is empty or repeats the newest entry. 0 or -1. */
int hr_le_history_add(hr_lineedit *le, const char *line);
/* Keeps the history in the file at path across sessions (lineedit_history.c): reads its newest
 * HR_LE_HISTORY_MAX entries now, and from then on appends each line the history takes. The
 * file and missing directories above it are created for the owner only. 0, or -1 with a
 * message in err (the history then stays in memory). */
int hr_le_history_persist(hr_lineedit *le, const char *path, char *err, size_t cap);
/* Appends line to the history's file, if it has one. 0 or -1. */
int hr_le_history_append(const hr_lineedit *le, const char *line);
void hr_le_free(hr_lineedit *le);
/* Columns a UTF-8 string takes on a terminal (wide characters 2, combining marks 0). */
size_t hr_le_columns(const char *s, size_t len);
#endif
