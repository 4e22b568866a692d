// The V8 flags the server runs with: `npm start` (scripts/start.mjs) and the benchmark's server
// (bench/run.ts) start it with the same ones.
//
// - The old generation is capped (SERVER_HEAP_MB, 256 MB by default). Uncapped, V8 lets a busy
//   server's heap grow to several times what it holds before collecting it: RSS went past 300 MB
//   under two minutes of writes at 32 clients (bench/; docs/contract.md §14); SERVER_HEAP_MB raises it for big
//   imports.
// - Under such a cap V8 also takes its smallest growing factor (1.3: a full collection each time
//   the old generation has grown by 30 %), so a server holding ~75 MB (Next.js and the app) marked
//   it all again every ~1.2 s under load, about 10 % of its CPU per request beside a bare server
//   holding 9 MB (docs/contract.md §14). Letting it double between full collections marks a third as often,
//   and the cap still bounds it (peak RSS under the benchmark's load stays under 250 MB).
export function serverNodeFlags(env = process.env) {
  return [`--max-old-space-size=${env.SERVER_HEAP_MB || '256'}`, '--heap-growing-percent=100'];
}
