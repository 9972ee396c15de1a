/* llama-chat-ref: renders a conversation with llama.cpp's own chat-template code
 * (llama_chat_apply_template from the prebuilt libllama the conformance tests install), so
 * tests can compare Hearth's renderings with llama.cpp's byte for byte.
 *
 * usage: llama-chat-ref [--lib PATH] [--add] (--name NAME | --file FILE) [ROLE CONTENT]...
 *   --name: one of llama.cpp's built-in template names (chatml, gemma, phi3, ...);
 *   --file: a template text (a GGUF's tokenizer.chat_template), which llama.cpp classifies;
 *   --add:  end with the assistant's generation prompt.
 * The rendering goes to stdout, nothing else.
 * The library: --lib, else $HEARTH_LLAMA_LIB, else $HEARTH_SRC/tests/conformance/node_modules/
 * @node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so.
 * Exit: 0 rendered, 3 llama.cpp does not know the template, 77 the library is not there (one
 * line), 2 bad arguments, 1 anything else.
 *
 * The library is loaded with dlopen, so this builds without llama.cpp's headers; the message
 * struct is declared here as include/llama.h of that version has it. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lc_msg {
    const char *role;
    const char *content;
} lc_msg;

typedef int32_t (*lc_apply_fn)(const char *tmpl, const lc_msg *chat, size_t n, bool add_ass, char *buf, int32_t len);

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    for (size_t got; p && (got = fread(p + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *q = realloc(p, cap *= 2);
            if (!q) free(p);
            p = q;
        }
    }
    fclose(f);
    if (p) p[n] = 0;
    return p;
}

static void *open_lib(const char *lib) {
    char path[4096];
    if (!lib) lib = getenv("HEARTH_LLAMA_LIB");
    if (!lib) {
        const char *src = getenv("HEARTH_SRC");
        snprintf(path, sizeof path,
                 "%s/tests/conformance/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so",
                 src ? src : ".");
        lib = path;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) printf("llama-chat-ref: llama.cpp library not available (%s); skipping\n", lib);
    return h;
}

int main(int argc, char **argv) {
    const char *lib = NULL, *name = NULL, *file = NULL;
    bool add = false;
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--add")) add = true;
        else if (i + 1 < argc && !strcmp(argv[i], "--lib")) lib = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--name")) name = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--file")) file = argv[++i];
        else break;
    }
    if ((!name == !file) || (argc - i) % 2) {
        fprintf(stderr, "usage: llama-chat-ref [--lib PATH] [--add] (--name NAME | --file FILE) [ROLE CONTENT]...\n");
        return 2;
    }
    char *text = file ? read_file(file) : NULL;
    if (file && !text) {
        fprintf(stderr, "llama-chat-ref: cannot read %s\n", file);
        return 1;
    }
    void *h = open_lib(lib);
    if (!h) return 77;
    lc_apply_fn apply = (lc_apply_fn)dlsym(h, "llama_chat_apply_template");
    if (!apply) {
        fprintf(stderr, "llama-chat-ref: llama_chat_apply_template not found\n");
        return 1;
    }
    size_t n = (size_t)(argc - i) / 2;
    lc_msg *msgs = calloc(n ? n : 1, sizeof *msgs);
    for (size_t k = 0; msgs && k < n; k++) msgs[k] = (lc_msg){argv[i + 2 * k], argv[i + 2 * k + 1]};
    /* First call sizes the output; the function returns the full length whatever buf holds. */
    int32_t len = msgs ? apply(text ? text : name, msgs, n, add, NULL, 0) : -2;
    if (len == -1) return 3;
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!buf || apply(text ? text : name, msgs, n, add, buf, len + 1) != len) {
        fprintf(stderr, "llama-chat-ref: llama_chat_apply_template failed\n");
        return 1;
    }
    fwrite(buf, 1, (size_t)len, stdout);
    free(buf);
    free(msgs);
    free(text);
    return 0;
}
