/**
 * What the load generators that hold MCP calls open (bench/waiters-load.mjs, bench/gateway-load.mjs)
 * share: a JSON-RPC POST to /mcp over node:http, lighter than the SDK's client for thousands at once,
 * and reading an answer to its end.
 */
import http from 'node:http';

/**
 * A POST to `base`'s /mcp through `agent`, resolving with the response (its body unread); every
 * request is pushed on `open`, so the generator can end them all.
 */
export function mcpPoster(base, agent, open) {
  return (body, headers) =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const req = http.request(
        new URL('/mcp', base),
        {
          method: 'POST',
          agent,
          headers: {
            ...headers,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'content-length': Buffer.byteLength(text),
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(text);
      open.push(req);
    });
}

/** Reads a response to its end (or its error). */
export const drain = (res) =>
  new Promise((resolve) => {
    res.resume();
    res.on('end', resolve);
    res.on('error', resolve);
  });
