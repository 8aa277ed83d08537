/**
 * Duplicate object keys in a JSON document. JSON.parse keeps the last value
 * silently; the original server reports each duplicate under fieldValidation
 * (a warning with Warn, a 400 with Strict). Paths are written as the
 * server writes unknown fields: `metadata.labels.a`, `spec.ports[0].port`.
 * The text must be valid JSON (parse it first).
 */
export function duplicateJsonFields(text: string): string[] {
  interface Frame {
    array: boolean;
    path: string;
    keys: Set<string>;
    index: number;
    /** The key (object) or index (array) of the value being read. */
    current: string;
  }
  const found: string[] = [];
  const stack: Frame[] = [];
  const child = (f: Frame | undefined): string => {
    if (!f) return '';
    if (f.array) return `${f.path}[${f.index}]`;
    return f.path ? `${f.path}.${f.current}` : f.current;
  };
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (expectKey) {
        const top = stack[stack.length - 1] as Frame;
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        top.current = key;
        if (top.keys.has(key)) found.push(child(top));
        else top.keys.add(key);
        expectKey = false;
      }
    } else if (c === 0x7b /* { */) {
      stack.push({ array: false, path: child(stack[stack.length - 1]), keys: new Set(), index: 0, current: '' });
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      stack.push({ array: true, path: child(stack[stack.length - 1]), keys: new Set(), index: 0, current: '' });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.array) top.index++;
      else if (top) expectKey = true;
    }
  }
  return found;
}
