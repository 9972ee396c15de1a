/* hearth: one command, git-style subcommands. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "run_opts.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} subcommand;

static const subcommand cmds[] = {
    {"run", hr_cmd_run, "generate text from a prompt"},
    {"chat", hr_cmd_chat, "interactive chat in the terminal (the model's chat template)"},
    {"serve", hr_cmd_serve, "OpenAI-compatible HTTP server with a chat page"},
    {"perplexity", hr_cmd_perplexity, "perplexity of a text file (llama.cpp's method)"},
    {"bench", hr_cmd_bench, "prompt and decode tokens/s, bytes/token, GB/s"},
    {"inspect", hr_cmd_inspect, "print a GGUF file's metadata and tensors"},
    {"tokenize", hr_cmd_tokenize, "print the tokens of a text"},
    {"place", hr_cmd_place, "choose hot neurons for a VRAM budget; write the GPU index"},
    {"routing", hr_cmd_routing, "replay a routing trace through expert-cache policies (hit rates)"},
    {"quantize", hr_cmd_quantize, "convert weight types: llama.cpp's mixes (Q4_K_M, Q6_K, IQ4_XS, Q8_0, F16, ...)"},
    {"calibrate", hr_cmd_calibrate, "count neuron activations, train predictors, write a PowerInfer file"},
    {"synth", hr_cmd_synth, "write a model of any shape with random weights"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: hearth <command> [flags]   (hearth <command> --help for its flags; hearth --version; hearth --list-devices)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) fprintf(f, "  %-11s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        hr_print_version();
        return 0;
    }
    if (!strcmp(argv[1], "--list-devices")) return hr_list_devices();
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "hearth: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
