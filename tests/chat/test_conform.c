/* Hearth's chat rendering against llama.cpp's own (llama_chat_apply_template, run by the
 * llama-chat-ref tool in tests/tools), byte for byte, on several conversations:
 *   1. by name: every family llama.cpp also has, under the same name;
 *   2. by template text: every real template of llama.cpp's models/templates (extracted from
 *      node-llama-cpp's source bundle by tests/chat/extract_templates.sh): both must classify
 *      it alike (both know it or neither does), and render it alike.
 * Environment: HEARTH_CHAT_REF (the tool), HEARTH_CHAT_TEMPLATES (the extracted folder).
 * Skips (77, one line) when either is missing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "chat/chat.h"
#include "testutil.h"

typedef struct conv {
    const char *what;
    hr_chat_msg m[6];
    size_t n;
    bool add;
} conv;

/* Whitespace around contents (families that trim and those that do not), a reply with
 * reasoning tags (passed through as written), non-ASCII text, a lone system message. */
static const conv convs[] = {
    {"system + user", {{"system", "You are terse."}, {"user", "Hi"}}, 2, true},
    {"multi-turn",
     {{"system", " Be brief. \n"}, {"user", "Hi\n"}, {"assistant", " Hello! "}, {"user", "What is 2+2?"}},
     4, true},
    {"multi-turn, no prompt",
     {{"system", "S"}, {"user", "U1"}, {"assistant", "A1"}, {"user", "U2"}, {"assistant", "A2"}},
     5, false},
    {"no system", {{"user", " Hi \n"}, {"assistant", " Hello. "}, {"user", "Who?"}}, 3, true},
    {"thinking", {{"user", "2+2?"}, {"assistant", "<think>\nadd\n</think>\n\n4"}, {"user", "3+3?"}}, 3, true},
    {"unicode", {{"system", "Réponds en français — 日本"}, {"user", "Ça va ?"}}, 2, true},
    {"user only, no prompt", {{"user", "one"}}, 1, false},
    {"system only", {{"system", "Just this."}}, 1, true},
};
#define N_CONVS (sizeof convs / sizeof convs[0])

/* Families whose Hearth format is the published Hugging Face one, where llama.cpp's
 * renderer of the same name prints something else (docs/chat.md), or that llama.cpp only
 * detects and has no name for. */
static bool by_name_excluded(const char *name) {
    return !strcmp(name, "llama2") || !strcmp(name, "mistral") || !strcmp(name, "falcon") || !strcmp(name, "dots1");
}

typedef struct out {
    char *p;
    size_t len;
    int rc;
} out;

/* Runs the reference tool; its exit status in o->rc (-1: could not run it). */
static void run_ref(const char *tool, const char *kind, const char *arg, const conv *c, out *o) {
    const char *argv[4 + 2 + 2 * 6 + 1];
    int k = 0;
    argv[k++] = tool;
    if (c->add) argv[k++] = "--add";
    argv[k++] = kind, argv[k++] = arg;
    for (size_t i = 0; i < c->n; i++) argv[k++] = c->m[i].role, argv[k++] = c->m[i].content;
    argv[k] = NULL;
    *o = (out){NULL, 0, -1};
    int fd[2];
    if (pipe(fd)) return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]), close(fd[1]);
        execv(tool, (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 0;
    for (;;) {
        if (o->len + 4096 > cap) {
            char *q = realloc(o->p, cap = cap * 2 + 8192);
            if (!q) break;
            o->p = q;
        }
        ssize_t r = read(fd[0], o->p + o->len, cap - o->len - 1);
        if (r <= 0) break;
        o->len += (size_t)r;
    }
    close(fd[0]);
    if (o->p) o->p[o->len] = 0;
    int st;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st)) o->rc = WEXITSTATUS(st);
}

static char *hearth_render(hr_chat_tmpl t, const conv *c) {
    hr_err e = {{0}};
    char *s = NULL;
    /* Families that print BOS/EOS between turns get the SentencePiece texts llama.cpp's
     * renderer writes literally. */
    if (hr_chat_render(t, c->m, c->n, c->add, "<s>", "</s>", &s, &e)) fprintf(stderr, "  render: %s\n", e.msg);
    return s;
}

/* Compares Hearth's rendering of family t with llama.cpp's for every conversation. */
static int compare(const char *tool, const char *kind, const char *arg, hr_chat_tmpl t) {
    int bad = 0;
    for (size_t i = 0; i < N_CONVS; i++) {
        out o;
        run_ref(tool, kind, arg, &convs[i], &o);
        char *h = hearth_render(t, &convs[i]);
        bool same = o.rc == 0 && h && strlen(h) == o.len && !memcmp(h, o.p, o.len);
        CHECKF(same, "%s %s (hearth %s), %s:\n  hearth: [%s]\n  llama:  [%s] (exit %d)", kind, arg, hr_chat_name(t),
               convs[i].what, h ? h : "(error)", o.p ? o.p : "", o.rc);
        bad += !same;
        free(h);
        free(o.p);
    }
    return bad;
}

static void by_name(const char *tool, int *n_cmp) {
    for (int t = 0; t < HR_CHAT_COUNT; t++) {
        const char *name = hr_chat_name((hr_chat_tmpl)t);
        if (by_name_excluded(name)) continue;
        compare(tool, "--name", name, (hr_chat_tmpl)t);
        (*n_cmp)++;
    }
    /* Aliases name llama.cpp families Hearth renders with another family's row. */
    const char *aliases[] = {"exaone4", "granite-4.0", "granite-4.1"};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        int t = hr_chat_from_name(aliases[i]);
        CHECKF(t >= 0, "alias %s unknown", aliases[i]);
        if (t >= 0) compare(tool, "--name", aliases[i], (hr_chat_tmpl)t), (*n_cmp)++;
    }
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) free(p), p = NULL;
    fclose(f);
    if (p) p[n] = 0, *len = (size_t)n;
    return p;
}

static int by_name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One real template: both classify it alike, and render it alike when they know it. */
static void one_template(const char *tool, const char *dir, const char *file, int *n_both, int *n_neither) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len = 0;
    char *text = slurp(path, &len);
    CHECKF(text != NULL, "cannot read %s", path);
    if (!text) return;
    bool known;
    hr_chat_tmpl t = hr_chat_detect(text, len, &known);
    out o;
    run_ref(tool, "--file", path, &convs[1], &o);
    bool llama_known = o.rc == 0;
    CHECKF(o.rc == 0 || o.rc == 3, "%s: llama-chat-ref exit %d", file, o.rc);
    CHECKF(known == llama_known, "%s: hearth %s, llama.cpp %s", file, known ? hr_chat_name(t) : "does not know it",
           llama_known ? "knows it" : "does not");
    if (known && llama_known) {
        int bad = compare(tool, "--file", path, t);
        printf("  %-52s %-18s %s\n", file, hr_chat_name(t), bad ? "DIFFERS" : "same");
        (*n_both)++;
    } else if (!known && !llama_known) {
        printf("  %-52s (neither knows it)\n", file);
        (*n_neither)++;
    }
    free(o.p);
    free(text);
}

static int by_template(const char *tool, const char *dir, int *n_both, int *n_neither) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char *names[512];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 512;) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".jinja")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name_cmp);
    for (size_t i = 0; i < n; i++) {
        one_template(tool, dir, names[i], n_both, n_neither);
        free(names[i]);
    }
    return (int)n;
}

int main(void) {
    const char *tool = getenv("HEARTH_CHAT_REF"), *dir = getenv("HEARTH_CHAT_TEMPLATES");
    if (!tool || !dir || access(tool, X_OK)) {
        printf("skip: llama-chat-ref or the extracted templates not configured (HEARTH_CHAT_REF, HEARTH_CHAT_TEMPLATES)\n");
        return 77;
    }
    out probe;
    run_ref(tool, "--name", "chatml", &convs[0], &probe);
    free(probe.p);
    if (probe.rc == 77) {
        printf("skip: llama.cpp's library is not installed (scripts/llama-ref-setup.sh)\n");
        return 77;
    }
    int n_names = 0, n_both = 0, n_neither = 0;
    by_name(tool, &n_names);
    int n_files = by_template(tool, dir, &n_both, &n_neither);
    if (n_files <= 0) {
        printf("skip: no templates in %s (node-llama-cpp's source bundle absent)\n", dir);
        return hr_test_failures ? 1 : 77;
    }
    printf("%d families by name, %d templates: %d rendered by both, %d by neither; %zu conversations each\n",
           n_names, n_files, n_both, n_neither, N_CONVS);
    return TEST_END();
}
