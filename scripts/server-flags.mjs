// The V8 flags the server runs with: `npm start` (scripts/start.mjs) and the benchmark's server
// (bench/run.ts) start it with the same ones.
//
// - The old generation is capped (SERVER_HEAP_MB, 256 MB by default). Uncapped, V8 lets a busy
//   server's heap grow to several times what it holds before collecting it: RSS went past 300 MB
//   under two minutes of writes at 32 clients (bench/; docs/contract.md §14); SERVER_HEAP_MB raises it for big
//   imports.
// - SERVER_GC chooses how the collector trades CPU for memory:
//   - `throughput` (the default): the heap may double between full collections (under the cap V8
//     would otherwise take its smallest growing factor, 1.3, and mark everything again each time
//     the heap grew by 30 %: about 10 % of the CPU per request once, docs/contract.md §14), and the
//     young generation keeps V8's size (16 MB semi-spaces), large enough that a request's objects
//     die young rather than being copied and promoted.
//   - `lean`, for an instance that mostly holds waiters (event-stream leases, MCP waits:
//     docs/performance.md): full collections each time the heap grows by 20 %, so the heap stays near what
//     is live, and 8 MB semi-spaces. It costs CPU on writes: server CPU per POST /work at 32
//     clients, interleaved runs on one database (2026-11-28): 0.48 ms by default, 0.56 lean; 2 MB
//     semi-spaces would take 0.71 (a request's objects outlive the scavenges and are promoted) for
//     no less memory with ten thousand waiting (peak 303–304 against 297–302 MiB).
export function serverNodeFlags(env = process.env) {
  const heap = `--max-old-space-size=${env.SERVER_HEAP_MB || '256'}`;
  if (env.SERVER_GC && !['throughput', 'lean'].includes(env.SERVER_GC)) {
    throw new Error(`SERVER_GC is throughput or lean, not ${env.SERVER_GC}.`);
  }
  if (env.SERVER_GC === 'lean') return [heap, '--heap-growing-percent=20', '--max-semi-space-size=8'];
  return [heap, '--heap-growing-percent=100'];
}
