import { ratioChart, type ChartBar } from "../../../bench/chart";

/** A small strict XML check: every tag closes in order, attributes are quoted, no stray `<` or `&`. */
function assertWellFormed(xml: string): void {
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    const text = xml.slice(i, lt < 0 ? xml.length : lt);
    expect(text).not.toMatch(/&(?!(amp|lt|gt|quot|apos);)/);
    if (lt < 0) break;
    tag.lastIndex = lt;
    const m = tag.exec(xml);
    if (!m) throw new Error(`malformed tag at ${lt}: ${xml.slice(lt, lt + 40)}`);
    const [, closing, name, , selfClosing] = m;
    if (closing) expect(stack.pop()).toBe(name);
    else if (!selfClosing) stack.push(name);
    i = tag.lastIndex;
  }
  expect(stack).toEqual([]);
}

describe("bench ratio chart", () => {
  const bars: ChartBar[] = [
    { key: "1", topology: "embedded", ratio: 0.455 },
    { key: "1", topology: "distributed", ratio: 0.557 },
    { key: "4a", topology: "embedded", ratio: 0.424 },
    { key: "4a", topology: "distributed", ratio: 0.169 },
    { key: "8", topology: "distributed", ratio: 0.065 },
  ];

  it("is well-formed SVG with one labelled bar per case and topology", () => {
    const svg = ratioChart(bars, "Cases <1–8> & baseline");
    expect(svg.startsWith("<svg ")).toBe(true);
    assertWellFormed(svg);
    const drawn = [...svg.matchAll(/class="bar" data-case="([^"]+)" data-topology="(\w+)"/g)].map(
      (m) => `${m[1]}/${m[2]}`,
    );
    expect(drawn).toEqual(bars.map((b) => `${b.key}/${b.topology}`));
    for (const label of ["45.5%", "55.7%", "42.4%", "16.9%", "6.5%"]) expect(svg).toContain(`>${label}<`);
  });

  it("scales the axis past 100% when a case beats the baseline", () => {
    const svg = ratioChart([{ key: "1", topology: "embedded", ratio: 1.15 }], "t");
    assertWellFormed(svg);
    expect(svg).toContain(">120%<");
  });
});
