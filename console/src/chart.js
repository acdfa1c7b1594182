// @ts-check
// A time-series chart (uPlot) of some of the live samples' figures: made once, fed every second,
// its size fixed so live data never moves the layout. Axes and grid take the page's colours (CSS
// variables, dark or light as the system asks) and are redrawn when the system's setting changes.
import { h } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const COLORS = ['#2563eb', '#16a34a', '#dc2626', '#9333ea'];
const DARK_COLORS = ['#60a5fa', '#4ade80', '#f87171', '#c084fc'];
const DARK = '(prefers-color-scheme: dark)';

/** The value of a CSS variable of the page (a colour of style.css). */
function cssVar(/** @type {string} */ name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** A series' colour for the current scheme. */
function seriesColor(/** @type {number} */ i) {
  return (matchMedia(DARK).matches ? DARK_COLORS : COLORS)[i % COLORS.length];
}

/** Axis options in the page's colours, read at each draw. */
function axis(/** @type {Partial<uPlot.Axis>} */ extra = {}) {
  return { stroke: () => cssVar('--chart-axis'), grid: { stroke: () => cssVar('--chart-grid'), width: 1 }, ticks: { stroke: () => cssVar('--chart-grid'), width: 1 }, ...extra };
}

/**
 * `series`: [{label, value(sample)}].
 * @param {{ title: string, live: import('./live.js').Live, series: { label: string, value: (s: any) => number | null }[], testId?: string }} props
 */
export function Chart({ title, live, series, testId }) {
  const box = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => {
    const el = /** @type {HTMLDivElement} */ (box.current);
    const width = () => Math.max(240, el.clientWidth);
    const plot = new uPlot({
      width: width(),
      height: 180,
      legend: { show: true },
      scales: { x: { time: true } },
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: () => seriesColor(i), width: 2 }))],
      axes: [axis(), axis({ size: 60 })],
    }, data(live.samples, series), el);
    const off = live.on((s) => {
      if (s) plot.setData(data(live.samples, series));
    });
    const resize = () => plot.setSize({ width: width(), height: 180 });
    window.addEventListener('resize', resize);
    const scheme = matchMedia(DARK);
    const recolor = () => plot.redraw(false, true);
    scheme.addEventListener('change', recolor);
    return () => {
      off();
      window.removeEventListener('resize', resize);
      scheme.removeEventListener('change', recolor);
      plot.destroy();
    };
  }, []);
  return h('section', { class: 'card chart', 'data-testid': testId }, h('h3', null, title), h('div', { ref: box, class: 'plot' }));
}

/** @param {any[]} samples @param {{ value: (s: any) => number | null }[]} series @returns {uPlot.AlignedData} */
function data(samples, series) {
  return [samples.map((s) => s.t / 1000), ...series.map((x) => samples.map((s) => x.value(s)))];
}
