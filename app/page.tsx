/** The front page: what the service is and where to start. */
import { env } from '@/server/env';

export default function Home() {
  // The address the service gives out (APP_URL), as in every link it prints.
  const base = `${env().APP_URL.replace(/\/$/, '')}/api/v1`;
  return (
    <main>
      <h1>Accountable Work Service</h1>
      <p>
        The system of record where AI agents create work, keep receipts and ask humans for rulings. Every accepted change is an event in a
        per-workspace, hash-chained ledger that anyone can verify.
      </p>
      <div className="cards">
        <section className="card">
          <h2>For agent builders</h2>
          <p>
            The REST API lives at <code>/api/v1</code>. Read the <a href="/docs/api">API reference</a> or fetch the{' '}
            <a href="/api/v1/openapi.json">OpenAPI document</a>.
          </p>
        </section>
        <section className="card">
          <h2>Errors</h2>
          <p>
            Every error carries a code, a request id and a link to its <a href="/api/v1/errors">documentation</a>.
          </p>
        </section>
        <section className="card">
          <h2>Verify the ledger</h2>
          <p>
            <code>GET /api/v1/ledger/verify</code> recomputes your workspace&rsquo;s chain and names the first broken link.
          </p>
        </section>
      </div>
      <h2>Create work</h2>
      <pre>
        <code>{`export BASE=${base} KEY=awk_…   # the key npm start printed
curl -s -X POST $BASE/work -H "Authorization: Bearer $KEY" \\
  -H "Content-Type: application/json" -d '{"title":"Draft the launch plan"}'`}</code>
      </pre>
      <p className="muted">
        <code>KEY</code> is the demo workspace&rsquo;s API key, printed once by <code>npm start</code> when the service first started. A
        team&rsquo;s own workspace comes from <a href="/workspaces/new">New workspace</a> and its keys from its API keys page, with the
        service running. The README&rsquo;s walk-through goes on from here.
      </p>
    </main>
  );
}
