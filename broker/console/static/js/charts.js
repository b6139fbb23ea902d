// Charts drawn as inline SVG by hand: a few lines each, no library, no build step.
// Every chart carries role="img" and a label saying what it shows in words, plus data-*
// attributes with the numbers it drew, so a reader (or a test) never has to read pixels.
import { fmtClock, h, plural, s } from "./dom.js";

const WIDTH = 640;

function scale(domainLow, domainHigh, rangeLow, rangeHigh) {
  const span = domainHigh - domainLow || 1;
  return (value) => rangeLow + ((value - domainLow) / span) * (rangeHigh - rangeLow);
}

/**
 * One partition's replicas as horizontal bars of their log end offsets, on one scale from 0
 * to the largest LEO, with the high watermark and the log start offset drawn as vertical
 * lines across every bar: a follower that lags shows as a shorter bar, and the HW line
 * stops where the slowest in-sync replica holds it.
 */
export function replicaBars(partition, testid) {
  const rowHeight = 22;
  const left = 78;
  const right = 150;
  const top = 6;
  const replicas = partition.replicas;
  const height = top * 2 + rowHeight * replicas.length + 14;
  const leaderLeo = replicas.find((r) => r.broker_id === partition.leader_id)?.log_end_offset ?? 0;
  const high = Math.max(1, partition.high_watermark, ...replicas.map((r) => r.log_end_offset ?? 0));
  const x = scale(0, high, left, WIDTH - right);
  const hw = partition.high_watermark;
  const start = partition.log_start_offset;
  const rows = replicas.map((replica, index) => {
    const y = top + index * rowHeight;
    const leo = replica.log_end_offset;
    const leader = replica.broker_id === partition.leader_id;
    const kind = leader ? "bar-leader" : replica.in_sync ? "bar-follower" : "bar-out";
    const behind = leo === null || leo === undefined ? null : leaderLeo - leo;
    const role = leader ? "leader" : replica.in_sync ? "in sync" : "out of sync";
    const note = leo === null || leo === undefined ? "unknown" : behind > 0 && !leader ? `${leo} (−${behind})` : String(leo);
    return s(
      "g",
      {
        "data-testid": `${testid}-replica-${replica.broker_id}`,
        "data-leo": leo ?? "",
        "data-in-sync": replica.in_sync ? "true" : "false",
      },
      s("title", { text: `broker ${replica.broker_id} (${role}): log end offset ${leo ?? "unknown"}` }),
      s("text", { x: 0, y: y + 15, text: `broker ${replica.broker_id}` }),
      s("rect", { class: kind, x: left, y: y + 3, height: rowHeight - 8, width: Math.max(0, x(leo ?? 0) - left) }),
      s("text", { x: WIDTH - right + 8, y: y + 15, text: `${note} ${leader ? "L" : ""}` }),
    );
  });
  const bottom = top + rowHeight * replicas.length;
  return s(
    "svg",
    {
      class: "bars",
      viewBox: `0 0 ${WIDTH} ${height}`,
      role: "img",
      "data-testid": testid,
      "data-high-watermark": hw,
      "data-log-start-offset": start,
      "aria-label":
        `Partition ${partition.partition_id}: high watermark ${hw}, log start ${start}; ` +
        replicas.map((r) => `broker ${r.broker_id} log end ${r.log_end_offset ?? "unknown"}`).join(", "),
    },
    rows,
    s("line", { class: "line-start", x1: x(start), x2: x(start), y1: top - 4, y2: bottom + 2 }),
    s("line", { class: "line-hw", x1: x(hw), x2: x(hw), y1: top - 4, y2: bottom + 2 }),
    s("text", { x: Math.min(x(hw), WIDTH - right - 40), y: height - 2, text: `HW ${hw}` }),
  );
}

/** A small line of recent values (no axes): the trend at a glance, the figures beside it. */
export function sparkline(values, label, testid) {
  const width = 160;
  const height = 32;
  const max = Math.max(1, ...values);
  const x = scale(0, Math.max(1, values.length - 1), 2, width - 2);
  const y = scale(0, max, height - 3, 3);
  const points = values.map((value, index) => `${x(index).toFixed(1)},${y(value).toFixed(1)}`).join(" ");
  return s(
    "svg",
    { class: "spark", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, "data-testid": testid },
    s("line", { class: "axis", x1: 0, x2: width, y1: height - 2, y2: height - 2 }),
    values.length ? s("polyline", { class: "series-0", points }) : null,
  );
}

/**
 * A time chart of one or more series over the same samples: [{name, values}] against times
 * (epoch ms). The y axis starts at 0 so a rise and a fall read as what they are; `format`
 * writes a value as a person reads it (a duration, a count with its noun), on the axis and
 * in the label, and the time axis shows clock times, never raw milliseconds.
 */
export function timeChart(times, series, { label, format, testid }) {
  const height = 200;
  const left = 58;
  const bottom = 24;
  const all = series.flatMap((one) => one.values);
  const max = Math.max(1, ...all);
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? 1;
  const x = scale(first, last === first ? first + 1 : last, left, WIDTH - 8);
  const y = scale(0, max * 1.1, height - bottom, 8);
  const lines = series.map((one, index) =>
    one.values.length
      ? s("polyline", {
          class: `series-${index}`,
          points: one.values.map((value, i) => `${x(times[i]).toFixed(1)},${y(value).toFixed(1)}`).join(" "),
        })
      : null,
  );
  const latest = series.map((one) => one.values[one.values.length - 1] ?? 0);
  const span = times.length ? `, ${fmtClock(first)} to ${fmtClock(last)} UTC` : "";
  return h(
    "figure",
    { class: "chart" },
    s(
      "svg",
      {
        class: "chart",
        viewBox: `0 0 ${WIDTH} ${height}`,
        role: "img",
        "data-testid": testid,
        "data-samples": times.length,
        "data-last": latest[0] ?? "",
        "data-max": Math.max(0, ...(series[0]?.values ?? [0])),
        "aria-label": `${label}: ${plural(times.length, "sample")}${span}, latest ${latest.map((v, i) => `${series[i].name} ${format(v)}`).join(", ")}`,
      },
      s("line", { class: "axis", x1: left, x2: WIDTH - 8, y1: height - bottom, y2: height - bottom }),
      s("line", { class: "axis", x1: left, x2: left, y1: 8, y2: height - bottom }),
      s("text", { x: 4, y: y(max) + 4, "data-testid": `${testid}-max`, text: format(max) }),
      s("text", { x: 4, y: height - bottom, text: `0` }),
      timeAxis(times, testid, height, left),
      lines,
    ),
    h(
      "figcaption",
      { class: "legend" },
      series.map((one, index) => h("span", {}, h("span", { class: `swatch s${index}` }), one.name)),
    ),
  );
}

/** The first and last sample's clock times under the chart, or a word when there is none yet. */
function timeAxis(times, testid, height, left) {
  if (!times.length) return s("text", { x: left, y: height - 6, text: "no samples yet" });
  const to = `${fmtClock(times[times.length - 1])} UTC`;
  return [
    times.length > 1 ? s("text", { x: left, y: height - 6, "data-testid": `${testid}-from`, text: fmtClock(times[0]) }) : null,
    s("text", { x: WIDTH - 8, y: height - 6, "text-anchor": "end", "data-testid": `${testid}-to`, text: to }),
  ];
}
