import { RE2JS } from '@bufbuild/re2';

/**
 * Locating regular-expression matches in linear time, for CEL's `find` and
 * `findAll`. The RE2 port compiles a pattern into a program but only answers
 * whether an input matches; where the match is comes from running that
 * program here as a Pike VM (Thompson's simulation with a thread list in
 * priority order), which gives the leftmost-first match RE2 and Go report,
 * in time proportional to the input times the program, never backtracking.
 *
 * The program's instruction codes and zero-width flags are the port's
 * (Inst.ts and Utils.ts of `@bufbuild/re2`); the tests compare the results
 * with JavaScript's engine on patterns both accept, so a change in the
 * port's program shows there.
 */

type Program = RE2JS['re2Input']['prog'];
type Instruction = ReturnType<Program['getInst']>;

const ALT = 1;
const ALT_MATCH = 2;
const CAPTURE = 3;
const EMPTY_WIDTH = 4;
const FAIL = 5;
const MATCH = 6;
const NOP = 7;
const RUNE = 8;
const RUNE1 = 9;
const RUNE_ANY = 10;
const RUNE_ANY_NOT_NL = 11;

const EMPTY_BEGIN_LINE = 0x01;
const EMPTY_END_LINE = 0x02;
const EMPTY_BEGIN_TEXT = 0x04;
const EMPTY_END_TEXT = 0x08;
const EMPTY_WORD_BOUNDARY = 0x10;
const EMPTY_NO_WORD_BOUNDARY = 0x20;

const NEWLINE = 0x0a;

function isWordRune(r: number): boolean {
  return (r >= 0x61 && r <= 0x7a) || (r >= 0x41 && r <= 0x5a) || (r >= 0x30 && r <= 0x39) || r === 0x5f;
}

/** The zero-width assertions that hold between runes `before` and `after` (-1 at the ends of the text). */
function emptyContext(before: number, after: number): number {
  let flags = 0;
  if (before < 0) flags |= EMPTY_BEGIN_TEXT | EMPTY_BEGIN_LINE;
  if (before === NEWLINE) flags |= EMPTY_BEGIN_LINE;
  if (after < 0) flags |= EMPTY_END_TEXT | EMPTY_END_LINE;
  if (after === NEWLINE) flags |= EMPTY_END_LINE;
  flags |= isWordRune(before) !== isWordRune(after) ? EMPTY_WORD_BOUNDARY : EMPTY_NO_WORD_BOUNDARY;
  return flags;
}

/** A compiled pattern whose matches can be located. */
export interface Searcher {
  /** The leftmost-first match at or after UTF-16 offset `from`, as [start, end) offsets, or undefined. */
  search(input: string, from: number): [number, number] | undefined;
}

interface Thread {
  pc: number;
  start: number;
}

class ThreadList {
  readonly threads: Thread[] = [];
  private readonly seen: Uint8Array;

  constructor(size: number) {
    this.seen = new Uint8Array(size);
  }

  clear(): void {
    this.threads.length = 0;
    this.seen.fill(0);
  }

  /** Marks `pc` as taken at this position; false when a higher-priority thread already holds it. */
  claim(pc: number): boolean {
    if (this.seen[pc]) return false;
    this.seen[pc] = 1;
    return true;
  }
}

export function compileSearcher(pattern: string): Searcher {
  const prog: Program = RE2JS.compile(pattern).re2Input.prog;
  const size = prog.numInst();
  const inst = (pc: number): Instruction => prog.getInst(pc);

  /** Follows the empty transitions from `pc` in priority order, adding the threads that wait on a rune or match. */
  const add = (list: ThreadList, pc: number, start: number, context: number): void => {
    const stack: number[] = [pc];
    while (stack.length > 0) {
      const at = stack.pop() as number;
      if (!list.claim(at)) continue;
      const i = inst(at);
      switch (i.op) {
        case ALT:
        case ALT_MATCH:
          // `out` is preferred: it is taken first, so it goes on the stack last.
          stack.push(i.arg, i.out);
          break;
        case CAPTURE:
        case NOP:
          stack.push(i.out);
          break;
        case EMPTY_WIDTH:
          if ((i.arg & ~context) === 0) stack.push(i.out);
          break;
        case FAIL:
          break;
        default:
          list.threads.push({ pc: at, start });
      }
    }
  };

  const consumes = (i: Instruction, rune: number): boolean => {
    switch (i.op) {
      case RUNE:
      case RUNE1:
        return i.matchRune(rune);
      case RUNE_ANY:
        return true;
      case RUNE_ANY_NOT_NL:
        return rune !== NEWLINE;
      default:
        return false;
    }
  };

  return {
    search(input, from) {
      let current = new ThreadList(size);
      let next = new ThreadList(size);
      let found: [number, number] | undefined;
      let pos = from;
      let before = from > 0 ? (input.codePointAt(from - 1) ?? -1) : -1;
      // A low surrogate before `from` belongs to the pair ending there.
      if (from > 1 && before >= 0xdc00 && before <= 0xdfff) before = input.codePointAt(from - 2) ?? before;
      for (;;) {
        const rune = pos < input.length ? (input.codePointAt(pos) as number) : -1;
        const width = rune > 0xffff ? 2 : 1;
        // A new thread starts here, after every older one, until a match is found.
        if (!found) add(current, prog.start, pos, emptyContext(before, rune));
        // Nothing left to follow once a match is found; before that, the next position seeds again.
        if (current.threads.length === 0 && found) break;
        const after = pos + (rune < 0 ? 0 : width);
        const nextRune = after < input.length ? (input.codePointAt(after) as number) : -1;
        for (const t of current.threads) {
          const i = inst(t.pc);
          if (i.op === MATCH) {
            found = [t.start, pos];
            // Threads after this one have lower priority than the match.
            break;
          }
          if (rune >= 0 && consumes(i, rune)) add(next, i.out, t.start, emptyContext(rune, nextRune));
        }
        if (rune < 0) break;
        [current, next] = [next, current];
        next.clear();
        before = rune;
        pos = after;
      }
      return found;
    },
  };
}

/**
 * Every match of `searcher` in `input`, as Go's FindAllString reports them
 * (an empty match right after a previous match is skipped), up to `limit`
 * (negative: all).
 */
export function findAllMatches(searcher: Searcher, input: string, limit: number): string[] {
  const out: string[] = [];
  let pos = 0;
  let previousEnd = -1;
  while (pos <= input.length && (limit < 0 || out.length < limit)) {
    const m = searcher.search(input, pos);
    if (!m) break;
    const [start, end] = m;
    let accept = true;
    if (end === start) {
      if (start === previousEnd) accept = false;
      const rune = input.codePointAt(end);
      pos = end + (rune === undefined ? 1 : rune > 0xffff ? 2 : 1);
    } else {
      pos = end;
    }
    previousEnd = end;
    if (accept) out.push(input.slice(start, end));
  }
  return out;
}
