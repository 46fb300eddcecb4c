#!/usr/bin/env python3
"""The order of cl_sample_pipeline_probe.cu's protocol, checked by random interleavings (dev scratch).

Each CTA has three agents: its data warps (iteration i: unit i's sums into slot i % ring, then unit
i - lag's output once its coefficients are in their slot), its publisher warp (unit u's sums, once
written, arrive on the unit; the unit is published when every CTA has arrived) and its fetcher warp
(unit u's coefficients into slot u % ring, once published). ring = lag + 1. Every step picks one
agent that can move. Checked: every run ends (no deadlock), and no slot is written again before the
other side is done with the unit it held (which is also what keeps an mbarrier phase from completing
twice before its wait). Run: python3 dev/cl_pipeline_protocol_sim.py (prints the runs that stuck).
"""
import random


def run(ctas, units, lag, seed):
    rnd = random.Random(seed)
    ring = lag + 1
    data_i = [0] * ctas  # the data warps' iteration
    in_b = [False] * ctas  # past A in it
    sums_written = [set() for _ in range(ctas)]
    sums_read = [set() for _ in range(ctas)]
    coef_written = [set() for _ in range(ctas)]
    coef_read = [set() for _ in range(ctas)]
    published_to = [0] * ctas  # the publisher's next unit
    fetched_to = [0] * ctas  # the fetcher's next unit
    arrivals = [0] * units
    while True:
        moves = []
        for g in range(ctas):
            i = data_i[g]
            if i < units + lag:
                u = i - lag
                if not in_b[g] or not 0 <= u < units or u in coef_written[g]:
                    moves.append(("data", g))
            if published_to[g] < units and published_to[g] in sums_written[g]:
                moves.append(("publisher", g))
            if fetched_to[g] < units and arrivals[fetched_to[g]] == ctas:
                moves.append(("fetcher", g))
        if not moves:
            break
        agent, g = rnd.choice(moves)
        if agent == "data":
            i = data_i[g]
            if not in_b[g]:
                if i < units:
                    assert i < ring or i - ring in sums_read[g], ("sums overwritten", g, i)
                    sums_written[g].add(i)
                in_b[g] = True
            else:
                if 0 <= i - lag < units:
                    coef_read[g].add(i - lag)
                in_b[g] = False
                data_i[g] += 1
        elif agent == "publisher":
            u = published_to[g]
            sums_read[g].add(u)
            arrivals[u] += 1
            published_to[g] += 1
        else:
            u = fetched_to[g]
            assert u < ring or u - ring in coef_read[g], ("coefficients overwritten", g, u)
            coef_written[g].add(u)
            fetched_to[g] += 1
    return all(i == units + lag for i in data_i) and published_to == [units] * ctas and fetched_to == [units] * ctas


if __name__ == "__main__":
    stuck = [(c, u, l, s) for c in (1, 2, 3, 5) for u in (1, 2, 3, 7, 12) for l in range(9) for s in range(30)
             if not run(c, u, l, s)]
    print(f"{len(stuck)} runs stuck" + "".join(f"\n  ctas {c}, units {u}, lag {l}, seed {s}" for c, u, l, s in stuck))
