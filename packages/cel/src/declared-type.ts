/** The declared type of a variable or of a part of it. */
export type CelDeclaredType =
  | 'dyn'
  | 'bool'
  | 'int'
  | 'uint'
  | 'double'
  | 'string'
  | 'bytes'
  | 'null'
  | 'type'
  /** A Kubernetes resource quantity (only results of the library's `quantity` functions have it). */
  | 'quantity'
  | { list: CelDeclaredType }
  | { map: CelDeclaredType }
  /** A message-like object: only these fields exist; each may be absent at run time (then selecting it is an error; `has()` tests it). */
  | { object: Readonly<Record<string, CelDeclaredType>> };
