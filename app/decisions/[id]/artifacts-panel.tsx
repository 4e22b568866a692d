/**
 * The artifacts a decision names, shown to its approver before the ruling: what is being
 * approved, each with its digest. Text, Markdown, CSV and JSON are read here and shown as text
 * (escaped: React writes them as text nodes, so a `<script>` in a report is only characters);
 * PNG, JPEG, GIF and WebP images load from the content route, which serves them sandboxed; anything
 * else is a download. An artifact registered by URI shows its address as text, never as a link the
 * page would follow: the bytes there were never fetched, and only the digest says what they must be.
 */
import { findArtifact, storedContent } from '@/server/domain/artifacts/artifacts';
import type { ArtifactView } from '@/server/domain/artifacts/view';
import { getRuntime } from '@/server/runtime';
import { plural } from '@/server/words';

const TEXT_TYPES = new Set(['text/plain', 'text/markdown', 'text/csv', 'application/json']);
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Text longer than this is offered as a download instead of shown. */
const MAX_SHOWN_BYTES = 256 * 1024;

const essence = (mediaType: string) => mediaType.split(';', 1)[0]!.trim();

function size(bytes: number): string {
  if (bytes < 1024) return plural(bytes, 'byte');
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function shownText(artifact: ArtifactView): Promise<string | null> {
  if (artifact.storage !== 'stored' || !TEXT_TYPES.has(essence(artifact.media_type)) || artifact.size_bytes > MAX_SHOWN_BYTES) return null;
  const { db } = await getRuntime();
  const row = await findArtifact(db, artifact.workspace_id, artifact.id);
  const bytes = row ? await storedContent(db, row) : null;
  return bytes ? new TextDecoder('utf-8', { fatal: false }).decode(bytes) : null;
}

async function Artifact({ artifact }: { artifact: ArtifactView }) {
  const type = essence(artifact.media_type);
  const text = await shownText(artifact);
  return (
    <li className="artifact" data-testid="artifact">
      <p>
        <strong className="prewrap">{artifact.title}</strong>{' '}
        <span className="muted">
          {artifact.artifact_type} · {artifact.media_type} · {size(artifact.size_bytes)}
        </span>
      </p>
      {text !== null ? (
        <pre className="break artifact-text" data-testid="artifact-text">
          {text}
        </pre>
      ) : artifact.content_url && IMAGE_TYPES.has(type) ? (
        <img src={artifact.content_url} alt={artifact.title} className="artifact-image" />
      ) : artifact.content_url ? (
        <p>
          <a href={artifact.content_url} download>
            Download
          </a>
        </p>
      ) : (
        <p>
          Kept by the agent at <code className="break">{artifact.uri}</code> (not fetched by this service).
        </p>
      )}
      <p className="muted">
        Digest{' '}
        <code className="break" data-testid="artifact-digest">
          {artifact.digest}
        </code>
        : <code>sha256sum</code> of a copy prints the same hex.
      </p>
    </li>
  );
}

export async function ArtifactsPanel({ artifacts }: { artifacts: ArtifactView[] }) {
  return (
    <section className="panel" aria-labelledby="artifacts-h">
      <h2 id="artifacts-h">What is being approved</h2>
      <ul className="artifacts">
        {artifacts.map((a) => (
          <Artifact key={a.id} artifact={a} />
        ))}
      </ul>
    </section>
  );
}
