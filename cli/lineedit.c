/* The line editor of lineedit.h. One line is edited at a time and redrawn whole after each
 * key (prompt, visible slice of the text, erase to the end of the row, cursor placement):
 * simple, and fast enough for text a person types. */
#include "lineedit.h"
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* How long to wait for the rest of an escape sequence before taking ESC as a key of its own. */
#define ESC_WAIT_MS 100
/* how long a wait for a key goes before it looks at the stop flag again (read_byte) */
#define STOP_SLICE_MS 50

enum key {
    K_NONE, K_CHAR, K_ENTER, K_LEFT, K_RIGHT, K_HOME, K_END, K_WLEFT, K_WRIGHT, K_BS, K_DEL, K_CTRL_D,
    K_KILL_START, K_KILL_END, K_KILL_WORD, K_UP, K_DOWN, K_CLEAR, K_INTR, K_PASTE_ON, K_PASTE_OFF, K_EOF, K_ERR
};

typedef struct buf {
    char *b;
    size_t len, cap, pos; /* pos: the cursor as a byte offset, always at a character start */
} buf;

/* ---- UTF-8 ---- */

/* Decodes one character at s (n > 0 bytes); an invalid or cut sequence is one byte. */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *adv) {
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!k || k > n) { *adv = 1; return 0xFFFD; }
    uint32_t cp = k == 1 ? c : c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) { *adv = 1; return 0xFFFD; }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *adv = k;
    return cp;
}

/* East Asian wide and fullwidth ranges, and emoji: two columns on a terminal. */
static const uint32_t wide[][2] = {
    {0x1100, 0x115F}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},
    {0xA000, 0xA4CF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE30, 0xFE4F}, {0xFF00, 0xFF60},
    {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

static size_t cp_columns(uint32_t cp) {
    if ((cp >= 0x0300 && cp <= 0x036F) || cp == 0x200B || (cp >= 0xFE00 && cp <= 0xFE0F)) return 0;
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
        if (cp >= wide[i][0] && cp <= wide[i][1]) return 2;
    return 1;
}

size_t hr_le_columns(const char *s, size_t len) {
    size_t cols = 0, adv;
    for (size_t i = 0; i < len; i += adv) cols += cp_columns(utf8_next((const unsigned char *)s + i, len - i, &adv));
    return cols;
}

static size_t next_char(const buf *b, size_t i) {
    size_t adv = 1;
    if (i < b->len) utf8_next((const unsigned char *)b->b + i, b->len - i, &adv);
    return i < b->len ? i + adv : i;
}

/* The start of the character before i: back over continuation bytes to a lead byte whose
 * character ends at i; a stray byte is a character of its own. */
static size_t prev_char(const buf *b, size_t i) {
    if (!i) return 0;
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && ((unsigned char)b->b[j] & 0xC0) == 0x80) j--;
    return next_char(b, j) == i ? j : i - 1;
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static size_t word_left(const buf *b, size_t i) {
    while (i > 0 && is_space(b->b[i - 1])) i--;
    while (i > 0 && !is_space(b->b[i - 1])) i--;
    return i;
}

static size_t word_right(const buf *b, size_t i) {
    while (i < b->len && is_space(b->b[i])) i++;
    while (i < b->len && !is_space(b->b[i])) i++;
    return i;
}

/* ---- the buffer ---- */

static int reserve(buf *b, size_t n) {
    if (n + 1 <= b->cap) return 0;
    size_t cap = (n + 1) * 2;
    char *p = realloc(b->b, cap);
    if (!p) return -1;
    b->b = p, b->cap = cap;
    return 0;
}

static int insert(buf *b, const char *s, size_t n) {
    if (reserve(b, b->len + n)) return -1;
    memmove(b->b + b->pos + n, b->b + b->pos, b->len - b->pos + 1);
    memcpy(b->b + b->pos, s, n);
    b->len += n, b->pos += n;
    return 0;
}

/* Removes bytes [from, to) and leaves the cursor at from. */
static void cut(buf *b, size_t from, size_t to) {
    memmove(b->b + from, b->b + to, b->len - to + 1);
    b->len -= to - from, b->pos = from;
}

static int set_text(buf *b, const char *s) {
    size_t n = strlen(s);
    if (reserve(b, n)) return -1;
    memcpy(b->b, s, n + 1);
    b->len = b->pos = n;
    return 0;
}

/* ---- the terminal ---- */

/* 1: a byte; 0: none within timeout_ms; -1: end of input (or *le->stop was set by a signal);
 * -2: a read error. */
static int read_byte(const hr_lineedit *le, unsigned char *c, int timeout_ms) {
    /* A signal that lands after the stop test but before a blocking read would leave that read
     * waiting for a key (a SIGTERM at the prompt then did not end the chat): a wait without end
     * polls in slices, so a stop set at any moment is seen within one. */
    const bool forever = timeout_ms < 0;
    struct pollfd p = {le->in, POLLIN, 0};
    for (;;) {
        if (le->stop && *le->stop) return -1;
        const int r = poll(&p, 1, forever ? STOP_SLICE_MS : timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0 || (r < 0 && forever)) break; /* a poll error: the read reports it */
        if (!forever) return 0;
    }
    for (;;) {
        ssize_t r = read(le->in, c, 1);
        if (r == 1) return 1;
        if (r == 0) return -1;
        if (errno != EINTR) return -2;
        if (le->stop && *le->stop) return -1;
    }
}

static void put(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w, n -= (size_t)w;
    }
}

static void puts_fd(int fd, const char *s) { put(fd, s, strlen(s)); }

static size_t term_width(int fd) {
    struct winsize ws;
    return ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

/* Keys by byte; control characters other than these are ignored. */
static enum key byte_key(hr_lineedit *le, unsigned char c) {
    bool lf_after_cr = le->skip_lf && c == '\n';
    le->skip_lf = c == '\r';
    switch (c) {
    case 1: return K_HOME;
    case 2: return K_LEFT;
    case 3: return K_INTR;
    case 4: return K_CTRL_D;
    case 5: return K_END;
    case 6: return K_RIGHT;
    case 8: case 127: return K_BS;
    case 9: return K_CHAR;
    case 10: return lf_after_cr ? K_NONE : K_ENTER;
    case 11: return K_KILL_END;
    case 12: return K_CLEAR;
    case 13: return K_ENTER;
    case 14: return K_DOWN;
    case 16: return K_UP;
    case 21: return K_KILL_START;
    case 23: return K_KILL_WORD;
    default: return c >= 32 ? K_CHAR : K_NONE;
    }
}

/* CSI sequences: ESC [ params final. */
static enum key csi_key(hr_lineedit *le) {
    char par[16];
    size_t np = 0;
    unsigned char f;
    for (;;) {
        if (read_byte(le, &f, ESC_WAIT_MS) != 1) return K_NONE;
        if (f >= 0x40 && f <= 0x7E) break;
        if (np < sizeof par - 1) par[np++] = (char)f;
    }
    par[np] = 0;
    bool mod = strchr(par, ';') != NULL; /* ESC[1;5C: Ctrl (or Alt) with the arrow */
    switch (f) {
    case 'A': return K_UP;
    case 'B': return K_DOWN;
    case 'C': return mod ? K_WRIGHT : K_RIGHT;
    case 'D': return mod ? K_WLEFT : K_LEFT;
    case 'H': return K_HOME;
    case 'F': return K_END;
    case '~':
        switch (atoi(par)) {
        case 1: case 7: return K_HOME;
        case 4: case 8: return K_END;
        case 3: return K_DEL;
        case 200: return K_PASTE_ON;
        case 201: return K_PASTE_OFF;
        }
    }
    return K_NONE;
}

static enum key escape_key(hr_lineedit *le) {
    unsigned char c;
    if (read_byte(le, &c, ESC_WAIT_MS) != 1) return K_NONE;
    le->skip_lf = false;
    if (c == '[') return csi_key(le);
    if (c == 'b' || c == 'B') return K_WLEFT;
    if (c == 'f' || c == 'F') return K_WRIGHT;
    if (c == 127 || c == 8) return K_KILL_WORD;
    if (c != 'O' || read_byte(le, &c, ESC_WAIT_MS) != 1) return K_NONE;
    switch (c) { /* ESC O x: application cursor mode */
    case 'A': return K_UP;
    case 'B': return K_DOWN;
    case 'C': return K_RIGHT;
    case 'D': return K_LEFT;
    case 'H': return K_HOME;
    case 'F': return K_END;
    }
    return K_NONE;
}

static enum key read_key(hr_lineedit *le, unsigned char *ch) {
    int r = read_byte(le, ch, -1);
    if (r < 0) return r == -1 ? K_EOF : K_ERR;
    return *ch == 27 ? escape_key(le) : byte_key(le, *ch);
}

/* Redraws the row: the prompt, the slice of the text around the cursor that fits, the rest of
 * the row erased, the cursor placed. Tabs and control characters show as one space. */
static void refresh(const hr_lineedit *le, const char *prompt, const buf *b) {
    size_t pw = strlen(prompt), width = term_width(le->out);
    size_t avail = width > pw + 1 ? width - pw - 1 : 1;
    size_t start = 0, end, cols = 0;
    while (start < b->pos && hr_le_columns(b->b + start, b->pos - start) > avail) start = next_char(b, start);
    for (end = start; end < b->len;) {
        size_t nx = next_char(b, end), w = hr_le_columns(b->b + end, nx - end);
        if (cols + w > avail) break;
        cols += w, end = nx;
    }
    buf o = {0};
    o.pos = 0;
    char tail[64];
    snprintf(tail, sizeof tail, "%s\x1b[0K\r", le->color_end);
    if (reserve(&o, pw + strlen(le->color) + (end - start) + sizeof tail + 32)) { free(o.b); return; }
    o.b[0] = 0;
    insert(&o, "\r", 1), insert(&o, prompt, pw), insert(&o, le->color, strlen(le->color));
    for (size_t i = start; i < end; i++) {
        char c = (unsigned char)b->b[i] < 32 ? ' ' : b->b[i];
        insert(&o, &c, 1);
    }
    insert(&o, tail, strlen(tail));
    size_t col = pw + hr_le_columns(b->b + start, b->pos - start);
    if (col > 0) {
        char mv[32];
        int k = snprintf(mv, sizeof mv, "\x1b[%zuC", col);
        insert(&o, mv, (size_t)k);
    }
    put(le->out, o.b, o.len);
    free(o.b);
}

/* ---- history ---- */

void hr_le_init(hr_lineedit *le, int in, int out) { *le = (hr_lineedit){.in = in, .out = out, .color = "", .color_end = ""}; }

int hr_le_history_add(hr_lineedit *le, const char *line) {
    if (!*line || (le->n_hist && !strcmp(le->hist[le->n_hist - 1], line))) return 0;
    if (le->n_hist == HR_LE_HISTORY_MAX) {
        free(le->hist[0]);
        memmove(le->hist, le->hist + 1, (le->n_hist - 1) * sizeof *le->hist);
        le->n_hist--;
    }
    if (le->n_hist == le->cap_hist) {
        size_t cap = le->cap_hist ? le->cap_hist * 2 : 16;
        char **p = realloc(le->hist, cap * sizeof *p);
        if (!p) return -1;
        le->hist = p, le->cap_hist = cap;
    }
    char *s = strdup(line);
    if (!s) return -1;
    le->hist[le->n_hist++] = s;
    (void)hr_le_history_append(le, line); /* a file that went away mid-chat costs only its copy */
    return 0;
}

void hr_le_free(hr_lineedit *le) {
    for (size_t i = 0; i < le->n_hist; i++) free(le->hist[i]);
    free(le->hist);
    free(le->hist_path);
    le->hist = NULL, le->hist_path = NULL, le->n_hist = le->cap_hist = 0;
}

/* Browsing: index hi into the history, n_hist meaning the line being edited (kept in *saved). */
static int history_step(hr_lineedit *le, buf *b, size_t *hi, char **saved, bool up) {
    if (up ? *hi == 0 : *hi >= le->n_hist) return 0;
    if (*hi == le->n_hist && !(*saved = strdup(b->b))) return -1;
    *hi = up ? *hi - 1 : *hi + 1;
    return set_text(b, *hi == le->n_hist ? *saved : le->hist[*hi]);
}

/* ---- editing ---- */

static bool raw_on(int fd, struct termios *old) {
    if (!isatty(fd) || tcgetattr(fd, old)) return false;
    struct termios t = *old;
    t.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    t.c_cflag |= CS8;
    t.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    t.c_cc[VMIN] = 1, t.c_cc[VTIME] = 0;
    return tcsetattr(fd, TCSANOW, &t) == 0;
}

/* Applies one editing key. Returns 1 when the key ends the line (*rc set), 0 to go on, -1 on
 * out of memory. */
static int apply(hr_lineedit *le, buf *b, enum key k, unsigned char ch, size_t *hi, char **saved, int *rc) {
    switch (k) {
    case K_CHAR: return insert(b, (const char *)&ch, 1);
    case K_ENTER: *rc = le->in_paste ? HR_LE_PASTED : HR_LE_LINE; return 1;
    case K_LEFT: b->pos = prev_char(b, b->pos); return 0;
    case K_RIGHT: b->pos = next_char(b, b->pos); return 0;
    case K_HOME: b->pos = 0; return 0;
    case K_END: b->pos = b->len; return 0;
    case K_WLEFT: b->pos = word_left(b, b->pos); return 0;
    case K_WRIGHT: b->pos = word_right(b, b->pos); return 0;
    case K_BS: if (b->pos) cut(b, prev_char(b, b->pos), b->pos); return 0;
    case K_CTRL_D: /* end of input on an empty line, else Delete */
        if (!b->len) { *rc = HR_LE_EOF; return 1; }
        if (b->pos < b->len) cut(b, b->pos, next_char(b, b->pos));
        return 0;
    case K_DEL: if (b->pos < b->len) cut(b, b->pos, next_char(b, b->pos)); return 0;
    case K_KILL_START: cut(b, 0, b->pos); return 0;
    case K_KILL_END: b->b[b->len = b->pos] = 0; return 0;
    case K_KILL_WORD: cut(b, word_left(b, b->pos), b->pos); return 0;
    case K_UP: case K_DOWN: return history_step(le, b, hi, saved, k == K_UP);
    case K_CLEAR: puts_fd(le->out, "\x1b[H\x1b[2J"); return 0;
    case K_INTR: *rc = HR_LE_INTR; return 1;
    case K_PASTE_ON: le->in_paste = true; return 0;
    case K_PASTE_OFF: le->in_paste = false; return 0;
    case K_EOF: *rc = HR_LE_EOF; return 1;
    case K_ERR: *rc = HR_LE_ERROR; return 1;
    case K_NONE: return 0;
    }
    return 0;
}

/* After the first byte of a multi-byte character, reads and inserts its other bytes. */
static int rest_of_char(hr_lineedit *le, buf *b, unsigned char lead) {
    size_t k = (lead & 0xE0) == 0xC0 ? 1 : (lead & 0xF0) == 0xE0 ? 2 : (lead & 0xF8) == 0xF0 ? 3 : 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c;
        if (read_byte(le, &c, ESC_WAIT_MS) != 1) return 0;
        if ((c & 0xC0) != 0x80) return byte_key(le, c) == K_CHAR ? insert(b, (const char *)&c, 1) : 0;
        if (insert(b, (const char *)&c, 1)) return -1;
    }
    return 0;
}

int hr_le_read(hr_lineedit *le, const char *prompt, char **line, size_t *len) {
    buf b = {0};
    if (reserve(&b, 80)) return HR_LE_ERROR;
    b.b[0] = 0;
    if (!le->raw) le->raw = raw_on(le->in, &le->saved);
    puts_fd(le->out, "\x1b[?2004h"); /* bracketed paste: a pasted block arrives marked */
    refresh(le, prompt, &b);
    size_t hi = le->n_hist;
    char *saved = NULL;
    int rc = HR_LE_ERROR;
    for (;;) {
        unsigned char ch = 0;
        enum key k = read_key(le, &ch);
        int r = apply(le, &b, k, ch, &hi, &saved, &rc);
        if (!r && k == K_CHAR && ch >= 0xC0) r = rest_of_char(le, &b, ch); /* draw whole characters */
        if (r < 0) { rc = HR_LE_ERROR; break; }
        if (r > 0) break;
        refresh(le, prompt, &b);
    }
    free(saved);
    if (rc == HR_LE_LINE || rc == HR_LE_PASTED) b.pos = b.len, refresh(le, prompt, &b);
    if (rc == HR_LE_INTR) puts_fd(le->out, "^C");
    if (rc != HR_LE_EOF && rc != HR_LE_ERROR) puts_fd(le->out, "\r\n");
    if (rc != HR_LE_PASTED) {
        /* Raw mode stays on between the lines of a paste: in cooked mode the terminal would echo
         * the rest of the paste arriving in between. */
        le->in_paste = false;
        puts_fd(le->out, "\x1b[?2004l");
        if (le->raw) tcsetattr(le->in, TCSANOW, &le->saved), le->raw = false;
    }
    if (rc == HR_LE_LINE && hr_le_history_add(le, b.b)) rc = HR_LE_ERROR;
    if (rc < 0 && rc != HR_LE_INTR) { free(b.b); return rc; }
    *line = b.b, *len = b.len;
    return rc;
}
