/** Tiny DOM helpers: elements are built with createElement and text goes in as textContent, never HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

export function button(label: string, onClick: () => void, title?: string): HTMLButtonElement {
  const b = el('button');
  b.type = 'button';
  b.textContent = label;
  if (title) {
    b.title = title;
    b.setAttribute('aria-label', title);
  }
  b.addEventListener('click', onClick);
  return b;
}

export function fmtUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(1)} µs`;
}

export function fmtNum(n: number): string {
  if (n === 0) return '0';
  const a = Math.abs(n);
  // Three significant digits: axis labels must stay narrow.
  const sig = (x: number): string => String(Number(x.toPrecision(3)));
  if (a >= 1e12) return `${sig(n / 1e12)}T`;
  if (a >= 1e9) return `${sig(n / 1e9)}G`;
  if (a >= 1e6) return `${sig(n / 1e6)}M`;
  if (a >= 1e3) return `${sig(n / 1e3)}k`;
  if (a < 0.01) return n.toExponential(2);
  return sig(n);
}
