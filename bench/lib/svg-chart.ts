// Hand-written SVG bar charts for bench results: grouped horizontal bars, one colour per series,
// the value printed at the end of each bar. No dependency; the output is a self-contained file.

export interface Series {
  name: string;
  color: string;
}

export interface BarGroup {
  label: string;
  /** One value per series, in series order; null when the series has no result here. */
  values: (number | null)[];
  /** Printed instead of the value (e.g. "unsupported") when the value is null. */
  missing?: string[];
}

export interface ChartSpec {
  title: string;
  unit: string;
  series: Series[];
  groups: BarGroup[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function formatNumber(v: number): string {
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function barChart(spec: ChartSpec): string {
  const width = 960;
  const labelWidth = 250;
  const valueWidth = 110;
  const barHeight = 14;
  const gap = 12;
  const top = 62;
  const plot = width - labelWidth - valueWidth - 20;
  const max = Math.max(1e-9, ...spec.groups.flatMap((g) => g.values.filter((v): v is number => v !== null && Number.isFinite(v))));
  const groupHeight = spec.series.length * barHeight + gap;
  const height = top + spec.groups.length * groupHeight + 30;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold">${esc(spec.title)}</text>`,
  ];
  spec.series.forEach((s, i) => {
    const x = 10 + i * 150;
    out.push(`<rect x="${x}" y="34" width="12" height="12" fill="${s.color}"/>`, `<text x="${x + 18}" y="45">${esc(s.name)}</text>`);
  });
  out.push(`<text x="${width - 10}" y="45" text-anchor="end" fill="#555">${esc(spec.unit)}</text>`);
  spec.groups.forEach((g, gi) => {
    const y0 = top + gi * groupHeight;
    out.push(`<text x="${labelWidth - 8}" y="${y0 + (spec.series.length * barHeight) / 2 + 4}" text-anchor="end">${esc(g.label)}</text>`);
    spec.series.forEach((s, si) => {
      const y = y0 + si * barHeight;
      const v = g.values[si];
      if (v === null || !Number.isFinite(v)) {
        const text = g.missing?.[si] ?? 'n/a';
        out.push(`<text x="${labelWidth + 4}" y="${y + barHeight - 3}" fill="#888" font-size="11">${esc(text)}</text>`);
        return;
      }
      const w = Math.max(1, (v / max) * plot);
      out.push(
        `<rect x="${labelWidth}" y="${y}" width="${w.toFixed(1)}" height="${barHeight - 2}" fill="${s.color}"/>`,
        `<text x="${(labelWidth + w + 4).toFixed(1)}" y="${y + barHeight - 3}" font-size="11">${esc(formatNumber(v))}</text>`,
      );
    });
  });
  out.push(`<line x1="${labelWidth}" y1="${top - 4}" x2="${labelWidth}" y2="${height - 26}" stroke="#999"/>`, '</svg>', '');
  return out.join('\n');
}
