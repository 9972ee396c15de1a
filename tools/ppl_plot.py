#!/usr/bin/env python3
"""Writes a small SVG: held-out perplexity against FFN sparsity, one line per series.

usage: ppl_plot.py OUT.svg TITLE SERIES...   where SERIES is NAME=S1:P1,S2:P2,...
(S: skipped share of FFN neurons in percent, P: perplexity). Standard library only, so the
README's plot can be redrawn anywhere; docs/model.md gives the command that drew it.
"""
import sys

W, H, ML, MR, MT, MB = 520, 340, 70, 130, 40, 50
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    out, title, series = argv[1], argv[2], []
    for arg in argv[3:]:
        name, pts = arg.split("=", 1)
        series.append((name, [tuple(float(v) for v in p.split(":")) for p in pts.split(",")]))
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x0, x1 = 0.0, max(xs) * 1.05
    pad = (max(ys) - min(ys)) * 0.1 or 0.1
    y0, y1 = min(ys) - pad, max(ys) + pad
    pw, ph = W - ML - MR, H - MT - MB

    def px(x):
        return ML + (x - x0) / (x1 - x0) * pw

    def py(y):
        return MT + ph - (y - y0) / (y1 - y0) * ph

    s = ["<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>" % (W, H),
         "<rect width='100%' height='100%' fill='white'/>",
         "<text x='%d' y='24' text-anchor='middle' font-size='14'>%s</text>" % (ML + pw // 2, title),
         "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>" % (ML, MT, pw, ph)]
    for k in range(0, int(x1) + 1, 10):
        s.append("<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/>" % (px(k), MT, px(k), MT + ph))
        s.append("<text x='%.1f' y='%d' text-anchor='middle' font-size='11'>%d%%</text>" % (px(k), MT + ph + 16, k))
    step = 0.5 if y1 - y0 < 6 else 1.0 if y1 - y0 < 12 else 5.0
    t = (int(y0 / step) + 1) * step
    while t < y1:
        s.append("<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>" % (ML, py(t), ML + pw, py(t)))
        s.append("<text x='%d' y='%.1f' text-anchor='end' font-size='11'>%g</text>" % (ML - 6, py(t) + 4, t))
        t += step
    s.append("<text x='%d' y='%d' text-anchor='middle' font-size='12'>FFN neurons skipped</text>" % (ML + pw // 2, H - 12))
    s.append("<text x='18' y='%d' text-anchor='middle' font-size='12' transform='rotate(-90 18 %d)'>perplexity</text>"
             % (MT + ph // 2, MT + ph // 2))
    for i, (name, pts) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        s.append("<polyline fill='none' stroke='%s' stroke-width='2' points='%s'/>" %
                 (c, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
        s += ["<circle cx='%.1f' cy='%.1f' r='3' fill='%s'/>" % (px(x), py(y), c) for x, y in pts]
        ly = MT + 16 + 18 * i
        s.append("<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='2'/>" % (W - MR + 10, ly, W - MR + 30, ly, c))
        s.append("<text x='%d' y='%d' font-size='11'>%s</text>" % (W - MR + 34, ly + 4, name))
    s.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(s) + "\n")


if __name__ == "__main__":
    main(sys.argv)
