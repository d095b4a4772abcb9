// Pure source ↔ IR line logic (no `vscode` import, unit-tested in Node).
// All lines here are 0-based, as editors count them; the server's 1-based map is converted once.

import type { FrameTable, IrLineMapping } from './protocol';

export interface SourceLine {
  uri: string;
  line: number; // 0-based
  depth: number;
}

/** One frame of an op's call chain (library frames included), 0-based line. */
export interface ChainFrame {
  uri: string;
  line: number;
  library: boolean;
}

/** A run of consecutive lines, both ends included. */
export interface LineRange {
  start: number;
  end: number;
}

export class LineMap {
  private readonly bySource = new Map<string, Map<number, number[]>>();
  private readonly byIr = new Map<number, SourceLine[]>();
  /** IR line → the frames of its op's first chain through library code, innermost first. */
  private readonly chainByIr = new Map<number, ChainFrame[]>();
  private readonly libraryUris = new Set<string>();

  /**
   * `irOffset`: lines shown above the IR in the pane (e.g. failure notes). `frames`: the
   * chains of ops made inside library code; their library lines link to the IR too.
   */
  constructor(map: readonly IrLineMapping[], irOffset = 0, frames?: FrameTable) {
    for (const m of map) {
      const irLine = m.irLine - 1 + irOffset;
      const line = m.line - 1;
      if (irLine < 0 || line < 0) continue;
      let lines = this.bySource.get(m.uri);
      if (!lines) this.bySource.set(m.uri, (lines = new Map()));
      const irs = lines.get(line) ?? [];
      if (!irs.includes(irLine)) irs.push(irLine);
      lines.set(line, irs);
      const srcs = this.byIr.get(irLine) ?? [];
      if (!srcs.some((s) => s.uri === m.uri && s.line === line)) {
        srcs.push({ uri: m.uri, line, depth: m.depth ?? 0 });
      }
      this.byIr.set(irLine, srcs);
    }
    if (frames) this.addFrames(frames, irOffset);
    for (const lines of this.bySource.values()) for (const irs of lines.values()) irs.sort((a, b) => a - b);
    for (const srcs of this.byIr.values()) srcs.sort((a, b) => a.depth - b.depth || a.line - b.line);
  }

  private addFrames(frames: FrameTable, irOffset: number): void {
    const library = new Set(frames.library);
    const chains: ChainFrame[][] = frames.chains.map((flat) => {
      const out: ChainFrame[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const uri = frames.files[flat[i]];
        if (uri === undefined || flat[i + 1] < 1) continue;
        out.push({ uri, line: flat[i + 1] - 1, library: library.has(flat[i]) });
      }
      return out;
    });
    for (const [row, cid] of frames.rows) {
      const irLine = row - 1 + irOffset;
      const chain = chains[cid];
      if (irLine < 0 || !chain) continue;
      if (!this.chainByIr.has(irLine)) this.chainByIr.set(irLine, chain);
      for (const f of chain) {
        if (!f.library) continue; // user frames come from `map`
        this.libraryUris.add(f.uri);
        let lines = this.bySource.get(f.uri);
        if (!lines) this.bySource.set(f.uri, (lines = new Map()));
        const irs = lines.get(f.line) ?? [];
        if (!irs.includes(irLine)) irs.push(irLine);
        lines.set(f.line, irs);
      }
    }
  }

  /** Whether `uri` is a library file some op of this map comes from. */
  hasLibraryFile(uri: string): boolean {
    return this.libraryUris.has(uri);
  }

  /**
   * Every frame of an IR line's op, innermost first: through library code when it came from
   * there (`modeling_llama.py` first, the user's line last), else its user frames.
   */
  chainFor(irLine: number): ChainFrame[] {
    const chain = this.chainByIr.get(irLine);
    if (chain) return chain;
    return this.sourcesFor(irLine).map((s) => ({ uri: s.uri, line: s.line, library: false }));
  }

  /**
   * Where Ctrl/Cmd-click on an IR line goes: an op made in library code opens the library
   * line that made it (one target, so the editor jumps there instead of listing the chain,
   * which it would sort by file name); other ops list their user frames, innermost first.
   */
  definitionTargets(irLine: number): ChainFrame[] {
    const chain = this.chainFor(irLine);
    return chain[0]?.library ? [chain[0]] : chain;
  }

  get isEmpty(): boolean {
    return this.byIr.size === 0;
  }

  /**
   * IR lines produced by a source line, through any frame: a line in `forward` that calls a
   * submodule owns the submodule's ops too (depth > 0), as the call chain says.
   */
  irLinesFor(uri: string, line: number): number[] {
    return this.bySource.get(uri)?.get(line) ?? [];
  }

  /** Source lines of an IR line, innermost frame first. */
  sourcesFor(irLine: number): SourceLine[] {
    return this.byIr.get(irLine) ?? [];
  }

  /** Source lines of an IR line in one file, innermost first. */
  sourceLinesIn(uri: string, irLine: number): number[] {
    return this.sourcesFor(irLine).filter((s) => s.uri === uri).map((s) => s.line);
  }

  /** Every source line in `uri` that produced IR, ascending. */
  mappedSourceLines(uri: string): number[] {
    return [...(this.bySource.get(uri)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /**
   * Colour bands as Compiler Explorer draws them: each mapped source line gets a colour, and
   * each IR line the colour of its innermost source line in `uri` (depth 0 wins so a
   * submodule's ops take the submodule's colour, not the caller's). The colour depends on the
   * source line alone, so every pane of a file (any target) agrees with the source's bands.
   */
  bands(uri: string, colours: number): { source: Map<number, number>; ir: Map<number, number> } {
    const source = new Map<number, number>();
    for (const line of this.mappedSourceLines(uri)) source.set(line, bandColour(line, colours));
    const ir = new Map<number, number>();
    for (const [irLine, srcs] of this.byIr) {
      const first = srcs.find((s) => s.uri === uri);
      if (first) ir.set(irLine, bandColour(first.line, colours));
    }
    return { source, ir };
  }
}

/** The band colour of a source line; neighbouring lines always differ. */
export function bandColour(line: number, colours: number): number {
  return line % colours;
}

/** Sorted, de-duplicated lines → runs of consecutive lines (fewer decoration ranges). */
export function toRanges(lines: Iterable<number>): LineRange[] {
  const sorted = [...new Set(lines)].sort((a, b) => a - b);
  const out: LineRange[] = [];
  for (const line of sorted) {
    const last = out[out.length - 1];
    if (last && line === last.end + 1) last.end = line;
    else out.push({ start: line, end: line });
  }
  return out;
}

/** Groups a colour map (line → colour index) into ranges per colour. */
export function bandRanges(colourOf: Map<number, number>, colours: number): LineRange[][] {
  const perColour: number[][] = Array.from({ length: colours }, () => []);
  for (const [line, c] of colourOf) perColour[c % colours].push(line);
  return perColour.map((lines) => toRanges(lines));
}

/** The IR line to reveal for a set of highlighted lines: the first, if any. */
export function revealTarget(lines: readonly number[]): number | undefined {
  return lines.length ? Math.min(...lines) : undefined;
}
