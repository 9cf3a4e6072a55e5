"""Draw docs/_static/sparse_pipeline.svg, the pipeline of the exact core (``sparse``).

Plain SVG written by hand, no plotting library needed: ``python docs/_static/sparse_pipeline.py``.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

W, BOX_W, X = 1000, 490, 30
SIDE_X = X + BOX_W + 60
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"

# (title, lines, fill): the main path, top to bottom.
MAIN = [
    ("solve(memory, runtimes, max_memory)", ["validate; forced decisions (runtime <= 0 out, weight 0 in)"], "#eef2f7"),
    ("Integer weights", ["quantised: round(m * scale);  scale=None: exact power-of-two grid",
                         "values on a common grid when their sum < 2**53; gcd divided out"], "#eef2f7"),
    ("0. Core", ["efficiency order, break item b, greedy and Dantzig bound",
                 "fix the items no optimal set can change"], "#e3f0e3"),
    ("1. OPT run (minknap)", ["expanding core around b; Pareto states merged, dominated dropped",
                              "bounds: LP at the next items, Lagrangian count bound, two lines",
                              "512-state heuristic run; pairing with items outside the core"], "#e3f0e3"),
    ("2. Reduction", ["Lagrangian bound at OPT fixes items in or out of every optimal set"], "#e3f0e3"),
    ("3. Canonical pass", ["dp_knapsack's own set: from the top item down, is the optimum",
                           "reachable without it?  O(1) bounds, greedy, decide runs"], "#fbeede"),
    ("Solution(value, saved, recomputed)", ["value re-summed exactly from the saved items"], "#eef2f7"),
]

# (attached to MAIN index, title, lines): the side paths.
SIDE = [
    (1, "Few distinct items (_types)", ["<= 24 (weight, value) pairs, >= 32 copies each:",
                                        "types with counts, lowest copies"]),
    (1, "scale=None (_real)", ["grid sums < 2**52: the kernel itself;",
                               "else a relaxation, checked exactly"]),
    (3, "Count path", ["> 1,000 states, count-structured items:",
                       "OPT count by count, cardinality bounds"]),
    (5, "Decide-run shortcuts", ["prefix question with weights and values swapped;",
                                 "subset-sum bit sets; two lists; count fills;",
                                 "window runs; uniqueness runs"]),
]

LINE_H, PAD, GAP = 17, 10, 26


def box(x, y, w, title, lines, fill):
    h = PAD * 2 + LINE_H * (1 + len(lines))
    out = [f"<rect x='{x}' y='{y}' width='{w}' height='{h}' rx='8' fill='{fill}' stroke='#4a5568' stroke-width='1.2'/>",
           f"<text x='{x + 12}' y='{y + PAD + 13}' {FONT} font-size='14' font-weight='bold' fill='#1a202c'>"
           f"{escape(title)}</text>"]
    for i, line in enumerate(lines):
        out.append(f"<text x='{x + 12}' y='{y + PAD + 13 + LINE_H * (i + 1)}' {FONT} font-size='12' "
                   f"fill='#2d3748'>{escape(line)}</text>")
    return out, h


def main() -> None:
    parts, centres, y = [], [], 20
    for title, lines, fill in MAIN:
        svg, h = box(X, y, BOX_W, title, lines, fill)
        parts += svg
        centres.append((y, h))
        y += h + GAP
    for (y0, h0), (y1, _) in zip(centres, centres[1:]):
        cx = X + BOX_W / 2
        parts.append(f"<line x1='{cx}' y1='{y0 + h0}' x2='{cx}' y2='{y1 - 3}' stroke='#4a5568' "
                     "stroke-width='1.5' marker-end='url(#arrow)'/>")
    side_y: dict[int, float] = {}
    for index, title, lines in SIDE:
        top, h_main = centres[index]
        sy = max(side_y.get(index, top), top)
        svg, h = box(SIDE_X, sy, W - SIDE_X - 20, title, lines, "#f7f7f7")
        parts += svg
        side_y[index] = sy + h + 8
        ya = min(sy + h / 2, top + h_main - 6)
        parts.append(f"<line x1='{X + BOX_W}' y1='{ya}' x2='{SIDE_X - 3}' y2='{sy + h / 2}' stroke='#718096' "
                     "stroke-width='1.2' stroke-dasharray='5,3' marker-end='url(#arrow-side)'/>")
        if index + 1 < len(MAIN):  # the side path rejoins below
            side_y[index + 1] = side_y[index]
    height = max(y, *side_y.values()) + 10
    head = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{height:.0f}' "
            f"viewBox='0 0 {W} {height:.0f}'>",
            "<defs>",
            "<marker id='arrow' markerWidth='10' markerHeight='8' refX='9' refY='4' orient='auto'>"
            "<path d='M0,0 L10,4 L0,8 z' fill='#4a5568'/></marker>",
            "<marker id='arrow-side' markerWidth='10' markerHeight='8' refX='9' refY='4' orient='auto'>"
            "<path d='M0,0 L10,4 L0,8 z' fill='#718096'/></marker>",
            "</defs>",
            f"<rect width='{W}' height='{height:.0f}' fill='white'/>")
    out = Path(__file__).with_name("sparse_pipeline.svg")
    out.write_text("\n".join([*head, *parts, "</svg>"]) + "\n", encoding="utf-8")
    print(out)


if __name__ == "__main__":
    main()
