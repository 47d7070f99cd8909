#!/usr/bin/env python3
# attn_v9_protocol.py - a model check of battn_v9_kernel's synchronisation (kernels/attn_wgmma.cu), run on
# the host: python3 lab/kernels/attn_v9_protocol.py. It checks the protocol, not the CUDA code.
# Model of battn_v9_kernel's synchronisation: producer, 2 consumers, full/empty mbarriers (parity waits as in
# PTX: try_wait.parity(P) passes iff the phase of parity P is the immediately preceding, completed one, i.e.
# P != parity of the current phase), asynchronous cp.async landings, ping-pong named barriers (a generation
# completes at 256 arrivals = one sync of 128 + one arrive of 128; two arrives by the same warpgroup in one
# generation would be a bug), slot ownership (no refill while a consumer still reads the previous tile).
import random
class MBar:
    def __init__(s, count): s.count, s.pending, s.phase = count, count, 0
    def arrive(s, k=1):
        s.pending -= k; assert s.pending >= 0
        if s.pending == 0: s.phase += 1; s.pending = s.count
    def passes(s, parity): return parity != (s.phase & 1)
def run(n, ST, ping, rng):
    full = [MBar(128) for _ in range(ST)]; empty = [MBar(8) for _ in range(ST)]
    content = [None]*ST; readers = [set() for _ in range(ST)]; landed = [None]*ST
    inflight = []                      # (slot, tile) copies issued, not yet landed
    tokens = [0, 0]                    # ping-pong: pending arrivals on barrier of consumer w
    def producer():
        slot, ph = 0, 0
        for t in range(n):
            while not empty[slot].passes(ph ^ 1): yield
            assert not readers[slot], ("refill while read", t, slot, readers[slot])
            content[slot] = t; landed[slot] = None; inflight.append((slot, t))
            if slot + 1 == ST: slot, ph = 0, ph ^ 1
            else: slot += 1
        yield 'done'
    def consumer(w):
        other = w ^ 1
        def sync():
            while tokens[w] == 0: yield
            tokens[w] -= 1
        def arrive():
            tokens[other] += 1; assert tokens[other] <= 1, "two grants in one generation"
        def read(slot, t):
            assert content[slot] == t and landed[slot] == t, ("stale read", w, t, slot)
        if ping and w == 1: arrive()
        slot, ph = 0, 0
        while not full[slot].passes(ph): yield
        if ping: yield from sync()
        read(slot, 0); readers[slot].add((w, 0))
        if ping: arrive()
        yield
        prev = slot
        if slot + 1 == ST: slot, ph = 0, ph ^ 1
        else: slot += 1
        for j in range(1, n):
            while not full[slot].passes(ph): yield
            if ping: yield from sync()
            read(slot, j); read(prev, j - 1); readers[slot].add((w, j))
            if ping: arrive()
            yield
            readers[prev].discard((w, j - 1)); empty[prev].arrive(4)
            prev = slot
            if slot + 1 == ST: slot, ph = 0, ph ^ 1
            else: slot += 1
        if ping: yield from sync()
        read(prev, n - 1)
        if ping and w == 0: arrive()
        yield
        readers[prev].discard((w, n - 1))
        yield 'done'
    agents = {'p': producer(), 'c0': consumer(0), 'c1': consumer(1)}
    done = set(); stall = 0  # stall: agent steps in a row without progress (all blocked = deadlock)
    while len(done) < 3:
        choices = [k for k in agents if k not in done] + (['land'] if inflight else [])
        k = rng.choice(choices)
        if k == 'land':
            slot, t = inflight.pop(0)  # a thread's noinc arrivals fire in the order of its copies
            landed[slot] = t; full[slot].arrive(128); stall = 0; continue
        r = next(agents[k])
        if r == 'done': done.add(k)
        stall = stall + 1 if r is None else 0
        if stall > 10000: raise AssertionError(("deadlock", n, ST, ping, done))
    assert tokens == [0, 0], ("pending grant at exit", tokens)
    assert not inflight
    return True
rng = random.Random(1)
cnt = 0
for trial in range(3000):
    for ST in (3, 4):
        for ping in (0, 1):
            n = rng.randint(1, 14)
            run(n, ST, ping, rng); cnt += 1
print("model: %d random schedules, n = 1..14 tiles, ST 3/4, ping-pong on/off: no deadlock, no stale read, "
      "no refill under a reader, no double grant, no pending grant at exit" % cnt)
