/**
 * Reading a ledger bundle as it streams in, without holding it: the members of its top-level object
 * other than `events` are parsed as they end (they are small), and the `events` array is cut into
 * batches of whole elements, each a JSON array text of its own (`[e1,e2,…]`) for a worker thread to
 * parse and hash (bundle-file.ts). A bundle of any length is read in flat memory, with one pass over
 * its bytes on this thread: inside strings (most of a bundle) it jumps from quote to quote.
 *
 * This is not a JSON parser: it tracks only strings and nesting, enough to find where the top-level
 * members and the array's elements begin and end. Everything else is left to JSON.parse: each
 * member's text, and each batch, so a syntax error anywhere is still found. The commas where
 * batches are cut are checked here (exactly one between two elements).
 */

import { BATCH_BYTES } from './verify-batch';

/** The file is not the JSON text of an object (a bundle's problem with its syntax, not its content). */
export class BundleSyntaxError extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** A batch of the events array: the JSON text `[…]` in the first `length` bytes of `json`, from element `firstIndex` on. */
export interface EventsBatch {
  json: ArrayBuffer;
  length: number;
  firstIndex: number;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

// Where the scanner is in the top-level object.
const enum At {
  Start, // before `{`
  FirstKey, // after `{`: a key or `}`
  Key, // after `,`: a key
  InKey, // inside a key's string
  Colon, // after a key
  ValueStart, // after `:`
  InMember, // inside a member's value (not events)
  InEvents, // inside the events array
  AfterValue, // after a value: `,` or `}`
  Done, // after the closing `}`
}

export class BundleScanner {
  /** The members other than `events`, parsed, in the order they came. */
  readonly members = new Map<string, unknown>();
  /** Whether an `events` member was seen, and whether its value was an array. */
  events: 'absent' | 'array' | 'not_an_array' = 'absent';

  private at = At.Start;
  private inString = false;
  private escaped = false;
  private depth = 0;
  private key = '';
  private captured: Uint8Array[] = [];

  // The events array: the batch being filled ('[' then elements), elements in it, and where we are.
  private batch: Uint8Array;
  private used = 0;
  private batchElements = 0;
  private elementsBefore = 0;
  private expectElement = true;

  /** `batchBytes`: a batch is cut at the first element boundary past this size. */
  constructor(private readonly batchBytes = BATCH_BYTES) {
    this.batch = new Uint8Array(batchBytes + 1024);
  }

  /** Reads the next bytes; the batches they complete, in order. Throws BundleSyntaxError. */
  push(chunk: Uint8Array): EventsBatch[] {
    const out: EventsBatch[] = [];
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      switch (this.at) {
        case At.InEvents:
          i = this.scanEvents(chunk, i, out);
          continue;
        case At.InMember:
        case At.InKey:
          i = this.scanCaptured(chunk, i);
          continue;
      }
      const b = chunk[i]!;
      i++;
      if (isSpace(b)) continue;
      switch (this.at) {
        case At.Start:
          if (b !== OPEN_BRACE) throw new BundleSyntaxError('a bundle is a JSON object');
          this.at = At.FirstKey;
          break;
        case At.FirstKey:
        case At.Key:
          if (b === CLOSE_BRACE && this.at === At.FirstKey) this.at = At.Done;
          else if (b === QUOTE) i = this.startCapture(At.InKey, i - 1);
          else throw new BundleSyntaxError('expected a member name');
          break;
        case At.Colon:
          if (b !== COLON) throw new BundleSyntaxError(`expected ":" after "${this.key}"`);
          this.at = At.ValueStart;
          break;
        case At.ValueStart:
          if (this.key === 'events' && b === OPEN_BRACKET) {
            if (this.events !== 'absent') throw new BundleSyntaxError('"events" appears twice');
            this.events = 'array';
            this.at = At.InEvents;
            this.depth = 0;
            this.inString = false;
            this.escaped = false;
            this.batch[0] = OPEN_BRACKET;
            this.used = 1;
          } else {
            i = this.startCapture(At.InMember, i - 1);
          }
          break;
        case At.AfterValue:
          if (b === COMMA) this.at = At.Key;
          else if (b === CLOSE_BRACE) this.at = At.Done;
          else throw new BundleSyntaxError(`expected "," or "}" after "${this.key}"`);
          break;
        case At.Done:
          throw new BundleSyntaxError('text after the bundle’s closing brace');
      }
    }
    return out;
  }

  /** After the last bytes: throws BundleSyntaxError unless the object was complete. */
  end(): void {
    if (this.at !== At.Done) throw new BundleSyntaxError('the bundle ends before its closing brace');
  }

  /** Starts keeping a key or a value whose first byte (a key's opening quote) is at `i`; scanning goes on from there. */
  private startCapture(at: At.InKey | At.InMember, i: number): number {
    this.at = at;
    this.captured = [];
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    return i;
  }

  /** Inside a key or a member's value: reads to its end, keeping its bytes. */
  private scanCaptured(chunk: Uint8Array, start: number): number {
    const n = chunk.length;
    for (let i = start; i < n; i++) {
      if (this.inString) {
        i = this.skipString(chunk, i) - 1;
        if (!this.inString && this.at === At.InKey) {
          this.captured.push(chunk.subarray(start, i + 1));
          this.key = this.parseCaptured() as string;
          this.at = At.Colon;
          return i + 1;
        }
        continue;
      }
      const b = chunk[i]!;
      if (b === QUOTE) {
        this.inString = true;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        this.depth++;
      } else if ((b === CLOSE_BRACE || b === CLOSE_BRACKET) && this.depth > 0) {
        this.depth--;
      } else if (this.depth === 0 && (b === COMMA || b === CLOSE_BRACE)) {
        this.captured.push(chunk.subarray(start, i));
        const value = this.parseCaptured();
        if (this.key === 'events') {
          if (this.events !== 'absent') throw new BundleSyntaxError('"events" appears twice');
          this.events = 'not_an_array';
        } else {
          if (this.members.has(this.key)) throw new BundleSyntaxError(`"${this.key}" appears twice`);
          this.members.set(this.key, value);
        }
        this.at = At.AfterValue;
        return i; // the comma or brace is read as what follows a value
      }
    }
    // Copied: the chunk's buffer is not ours to keep.
    this.captured.push(chunk.slice(start, n));
    return n;
  }

  private parseCaptured(): unknown {
    const bytes = this.captured.length === 1 ? this.captured[0]! : Buffer.concat(this.captured);
    this.captured = [];
    try {
      return JSON.parse(decoder.decode(bytes));
    } catch (err) {
      throw new BundleSyntaxError(`${this.at === At.InKey ? 'a member name' : `"${this.key}"`}: ${(err as Error).message}`);
    }
  }

  /**
   * Inside a string at `i`: the index just past its closing quote (inString turns false), or the
   * chunk's length when it goes on (escaped says whether the chunk ended inside an escape).
   */
  private skipString(chunk: Uint8Array, i: number): number {
    const n = chunk.length;
    if (this.escaped) {
      this.escaped = false;
      i++;
    }
    for (;;) {
      const quote = chunk.indexOf(QUOTE, i);
      const end = quote < 0 ? n : quote;
      // The backslashes right before the quote (or the chunk's end): an odd run escapes it.
      let run = 0;
      while (end - run - 1 >= i && chunk[end - run - 1] === BACKSLASH) run++;
      if (quote < 0) {
        this.escaped = run % 2 === 1;
        return n;
      }
      if (run % 2 === 0) {
        this.inString = false;
        return quote + 1;
      }
      i = quote + 1;
    }
  }

  /** Inside the events array: copies its bytes into batches, cut between elements. */
  private scanEvents(chunk: Uint8Array, start: number, out: EventsBatch[]): number {
    let from = start;
    let i = start;
    const n = chunk.length;
    while (i < n) {
      if (this.inString) {
        i = this.skipString(chunk, i);
        continue;
      }
      const b = chunk[i]!;
      if (this.depth === 0 && this.expectElement && b !== COMMA && b !== CLOSE_BRACKET && !isSpace(b)) {
        this.expectElement = false;
        this.batchElements++;
      }
      if (b === QUOTE) {
        this.inString = true;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        this.depth++;
      } else if (this.depth > 0 && (b === CLOSE_BRACE || b === CLOSE_BRACKET)) {
        this.depth--;
      } else if (b === CLOSE_BRACKET) {
        // The end of the array: the last batch.
        if (this.expectElement && this.elementsBefore + this.batchElements > 0) {
          throw new BundleSyntaxError('"events": a comma before "]"');
        }
        this.append(chunk, from, i);
        if (this.batchElements > 0) this.cut(out);
        this.at = At.AfterValue;
        return i + 1;
      } else if (b === COMMA && this.depth === 0) {
        const element = this.elementsBefore + this.batchElements;
        if (this.expectElement) throw new BundleSyntaxError(`"events": a comma where element ${element} was expected`);
        this.expectElement = true;
        if (this.used + (i - from) >= this.batchBytes) {
          // Cut here, the comma left out: each batch is an array of its own.
          this.append(chunk, from, i);
          this.cut(out);
          from = i + 1;
        }
      }
      i++;
    }
    this.append(chunk, from, n);
    return n;
  }

  private append(chunk: Uint8Array, from: number, to: number): void {
    const length = to - from;
    if (length <= 0) return;
    if (this.used + length + 1 > this.batch.length) {
      const grown = new Uint8Array(Math.max(this.batch.length * 2, this.used + length + 1));
      grown.set(this.batch.subarray(0, this.used));
      this.batch = grown;
    }
    this.batch.set(chunk.subarray(from, to), this.used);
    this.used += length;
  }

  private cut(out: EventsBatch[]): void {
    this.batch[this.used++] = CLOSE_BRACKET;
    out.push({ json: this.batch.buffer as ArrayBuffer, length: this.used, firstIndex: this.elementsBefore });
    this.elementsBefore += this.batchElements;
    this.batchElements = 0;
    this.batch = new Uint8Array(this.batchBytes + 1024);
    this.batch[0] = OPEN_BRACKET;
    this.used = 1;
  }
}
