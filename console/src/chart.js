// A time-series chart (uPlot) of some of the live samples' figures: made once, fed every second,
// its size fixed so live data never moves the layout.
import { h } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const COLORS = ['#2563eb', '#16a34a', '#dc2626', '#9333ea'];

/** `series`: [{label, value(sample)}]. */
export function Chart({ title, live, series, testId }) {
  const box = useRef(null);
  useEffect(() => {
    const width = () => Math.max(240, box.current.clientWidth);
    const plot = new uPlot({
      width: width(),
      height: 180,
      legend: { show: true },
      scales: { x: { time: true } },
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2 }))],
      axes: [{}, { size: 60 }],
    }, data(live.samples, series), box.current);
    const off = live.on((s) => {
      if (s) plot.setData(data(live.samples, series));
    });
    const resize = () => plot.setSize({ width: width(), height: 180 });
    window.addEventListener('resize', resize);
    return () => {
      off();
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, []);
  return h('section', { class: 'card chart', 'data-testid': testId }, h('h3', null, title), h('div', { ref: box, class: 'plot' }));
}

function data(samples, series) {
  return [samples.map((s) => s.t / 1000), ...series.map((x) => samples.map((s) => x.value(s)))];
}
