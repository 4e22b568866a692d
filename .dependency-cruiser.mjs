/**
 * The architecture's layer rules, checked by dependency-cruiser in CI (`npm run check:layers`,
 * .ci/run). From the top down:
 *
 *   app/ (pages, route handlers)  ->  server/api (tRPC procedures) and server/mcp (which calls them)
 *   server/api, server/mcp        ->  server/domain (services, the event registry, projections)
 *   server/gateway (upstream MCP servers: the client, guards, forwarding) sits beside server/mcp, over the domain
 *   server/domain                 ->  server/ledger, server/keys, db
 *   server/ledger                 ->  server/keys, db, and of the domain only server/domain/actor.ts
 *   db                            ->  nothing of the server
 *
 * Leaf modules every layer may use sit beside them: server/errors.ts (the one error table),
 * log.ts, metrics.ts, env.ts, job-lease.ts. server/projections (the replay of the ledger into the
 * tables) is of the domain's layer: it knows every aggregate, and is used as the domain is.
 * Type-only imports count (tsPreCompilationDeps): a type from a higher layer is a dependency on it.
 * Tests are exempt: they assemble the layers on purpose.
 */

/** Paths the rules do not judge: tests (beside their code, in test/ and e2e/). */
const TESTS = '(^|/)(test|e2e)/|\\.test\\.tsx?$|\\.test-d\\.ts$';

/** The leaf modules of server/ any layer may import. */
const LEAVES = '^server/(errors|log|metrics|env|job-lease)\\.ts$';

export default {
  forbidden: [
    {
      name: 'ledger-is-machinery',
      comment:
        'server/ledger holds the machinery only (canonical form, append, chain, tree, notes, bundles): it may use ' +
        'server/keys, db and the leaf modules, and of the domain only server/domain/actor.ts (who appends: the ' +
        'Actor type, and the system actor the ledger’s own jobs append as). ' +
        'What the events are is the domain’s (server/domain/events.ts fills in the registry by declaration merging).',
      severity: 'error',
      from: { path: '^server/ledger/', pathNot: TESTS },
      to: {
        path: '^(app|scripts)/|^server/',
        pathNot: [`^server/(ledger|keys)/`, LEAVES, '^server/domain/actor\\.ts$'],
      },
    },
    {
      name: 'keys-at-the-bottom',
      comment:
        'server/keys holds every key the service keeps and their encryption at rest; the ledger, the grants and ' +
        'the webhooks use it, so it uses none of them (only db and the leaf modules).',
      severity: 'error',
      from: { path: '^server/keys/', pathNot: TESTS },
      to: { path: '^(app|scripts)/|^server/', pathNot: ['^server/keys/', LEAVES] },
    },
    {
      name: 'domain-below-the-transports',
      comment:
        'server/domain (and its replay, server/projections) is called by the transports and the jobs, never the ' +
        'other way: no import of app/, the tRPC/REST layer, MCP and its gateway to upstream servers, the HTTP glue, the webhook delivery ' +
        '(server/webhooks, which reads the domain), the session of a request or the process’s composition. ' +
        'The runtime is passed in, as a type (server/runtime.ts): a type-only import of it is allowed.',
      severity: 'error',
      from: { path: '^server/(domain|projections)/', pathNot: TESTS },
      to: {
        path: '^(app|scripts)/|^server/(api|mcp|gateway|http|webhooks)/|^server/auth/(next-auth|session)\\.ts$|^server/(boot|jobs|retention|shutdown)\\.ts$',
      },
    },
    {
      name: 'domain-takes-the-runtime-as-a-type',
      comment: 'See domain-below-the-transports: the domain is handed the runtime, it never builds or fetches one.',
      severity: 'error',
      from: { path: '^server/(domain|projections)/', pathNot: TESTS },
      to: { path: '^server/runtime\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'transports-write-through-the-domain',
      comment:
        'The REST/tRPC procedures and MCP append nothing to the ledger themselves: every change is a domain ' +
        'service’s, with its event in the same transaction. The one exception is server/api/mutation.ts, which ' +
        'appends nothing but fills the sequence and hash the service’s append left for COMMIT into the stored ' +
        'response (appendAtCommitOf, the hot path’s stand-ins).',
      severity: 'error',
      from: { path: '^server/(api|mcp)/', pathNot: [TESTS, '^server/api/mutation\\.ts$'] },
      to: { path: '^server/ledger/append\\.ts$' },
    },
    {
      name: 'api-below-mcp',
      comment: 'MCP tools call the REST operations (server/mcp -> server/api); the procedures know nothing of MCP.',
      severity: 'error',
      from: { path: '^server/(api|domain|projections|ledger)/', pathNot: TESTS },
      to: { path: '^server/mcp/' },
    },
    {
      name: 'app-through-the-api',
      comment:
        'Pages and route handlers read and change through the API (the server-side tRPC caller, server actions), ' +
        'not the domain, the ledger or the tables. Types may cross (the pages render the API’s shapes). The ' +
        'files listed reach further today, each for a read the API has no procedure for (which workspace a task ' +
        'is in before the caller for that workspace exists, the session’s workspaces, the live pages’ pending ' +
        'count and ledger head, actors’ names, a stored artifact’s bytes, the bundle download) or for a pure ' +
        'constant or rule of the domain (enum lists, the default options, the single stage’s name); none writes. ' +
        'A new file that needs one should get a procedure instead.',
      severity: 'error',
      from: {
        path: '^app/',
        pathNot: [
          TESTS,
          '^app/_lib/(session|live|actors|policy-words)\\.ts$',
          '^app/decisions/page\\.tsx$',
          '^app/decisions/\\[id\\]/(page|artifacts-panel)\\.tsx$',
          '^app/tasks/\\[id\\]/page\\.tsx$',
          '^app/ledger/bundle/route\\.ts$',
        ],
      },
      to: { path: '^db/|^server/(domain|ledger|projections|webhooks|mcp)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'db-at-the-bottom',
      comment: 'db/ (the client and the schema) imports nothing of the server, the pages or the tools.',
      severity: 'error',
      from: { path: '^db/', pathNot: TESTS },
      to: { path: '^(app|server|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.next)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.mjs', '.js', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
