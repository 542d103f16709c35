/**
 * A bar chart of each case's share of the baseline, per topology (two bars per case, embedded and
 * distributed, each labelled with its value), as a stand-alone SVG written by hand: no dependency.
 */
export interface ChartBar {
  /** The case key ("1", "4a", "8"). */
  key: string;
  topology: "embedded" | "distributed";
  /** System req/s over baseline req/s. */
  ratio: number;
}

const COLORS = { embedded: "#4878a8", distributed: "#e08a3c" } as const;

const escape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function ratioChart(bars: ChartBar[], title: string): string {
  const keys = [...new Set(bars.map((b) => b.key))];
  const topologies = ["embedded", "distributed"] as const;
  const barW = 26;
  const gap = 4;
  const groupW = 2 * barW + gap + 28;
  const left = 56;
  const top = 48;
  const plotH = 240;
  const width = left + Math.max(1, keys.length) * groupW + 24;
  const height = top + plotH + 64;
  // The axis goes to the next 20% above the largest share (at least 100%).
  const max = Math.max(1, Math.ceil((Math.max(0, ...bars.map((b) => b.ratio)) * 100) / 20) * 0.2);
  const y = (r: number) => top + plotH - (r / max) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${left}" y="20" font-size="14" font-weight="bold">${escape(title)}</text>`,
  ];
  topologies.forEach((t, i) => {
    const x = left + i * 110;
    out.push(
      `<rect x="${x}" y="30" width="10" height="10" fill="${COLORS[t]}"/>`,
      `<text x="${x + 14}" y="39">${t}</text>`,
    );
  });
  for (let tick = 0; tick <= max + 1e-9; tick += 0.2) {
    const ty = y(tick).toFixed(1);
    out.push(
      `<line x1="${left}" y1="${ty}" x2="${width - 16}" y2="${ty}" stroke="#dddddd"/>`,
      `<text x="${left - 6}" y="${ty}" text-anchor="end" dominant-baseline="middle">${Math.round(tick * 100)}%</text>`,
    );
  }
  out.push(
    `<line x1="${left}" y1="${top + plotH}" x2="${width - 16}" y2="${top + plotH}" stroke="#333333"/>`,
  );
  keys.forEach((key, g) => {
    const gx = left + 14 + g * groupW;
    topologies.forEach((t, i) => {
      const bar = bars.find((b) => b.key === key && b.topology === t);
      if (!bar) return;
      const x = gx + i * (barW + gap);
      const by = y(bar.ratio);
      const label = `${(bar.ratio * 100).toFixed(1)}%`;
      out.push(
        `<rect class="bar" data-case="${escape(key)}" data-topology="${t}" x="${x}" y="${by.toFixed(1)}" width="${barW}" height="${(top + plotH - by).toFixed(1)}" fill="${COLORS[t]}"><title>case ${escape(key)}, ${t}: ${label} of the baseline</title></rect>`,
        `<text x="${x + barW / 2}" y="${(by - 4).toFixed(1)}" text-anchor="middle" font-size="9">${label}</text>`,
      );
    });
    out.push(
      `<text x="${gx + barW + gap / 2}" y="${top + plotH + 16}" text-anchor="middle" font-size="12">${escape(key)}</text>`,
    );
  });
  out.push(
    `<text x="${left}" y="${height - 12}" fill="#555555">share of the bare node:http baseline's req/s in the same run (higher is better)</text>`,
    "</svg>",
    "",
  );
  return out.join("\n");
}
