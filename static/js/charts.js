/* Draw the site's charts with uPlot (static/vendor/uplot/).

   Each chart is a <div data-chart="ID"> whose series come, already downsampled by the server,
   in <script type="application/json" id="ID"> (arena/charts.py):
     {kind: "money"|"price", baseline: 10000|null, x: [epoch seconds],
      series: [{label, colour, dashed, y: [number|null]}]}
   Times are shown in UTC, like the rest of the site. Labels are set as text, never as HTML.
   This file may be included more than once on a page: it draws each chart once. */
(function () {
  "use strict";
  if (window.forecasterCharts) return;
  window.forecasterCharts = { draw: drawAll };

  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  var MONEY = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
  var MUTED = "#677084";
  var GRID = "#eef0f4";
  var MINUS = "\u2212";

  function pad(n) { return n < 10 ? "0" + n : String(n); }
  function utc(seconds) { return new Date(seconds * 1000); }
  function day(d) { return MONTHS[d.getUTCMonth()] + " " + d.getUTCDate(); }
  function clock(d) { return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()); }
  function stamp(seconds) {
    var d = utc(seconds);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) +
      " " + clock(d) + " UTC";
  }

  function money(v) {
    var text = MONEY.format(Math.abs(v));
    return v < 0 ? MINUS + text : text;
  }
  function moneyTick(v, step) {
    var digits = step < 1 ? 2 : 0;
    var text = "$" + Math.abs(v).toLocaleString("en-US", {
      minimumFractionDigits: digits, maximumFractionDigits: digits });
    return v < 0 ? MINUS + text : text;
  }
  function price(v) { return (v * 100).toFixed(2) + "%"; }

  // Dated x ticks: a date under the first tick and wherever the day changes; hours between.
  function timeTicks(u, splits, axisIdx, space, step) {
    var prev = null;
    return splits.map(function (s) {
      var d = utc(s);
      var label;
      if (step >= 86400) {
        label = day(d);
        if (prev === null || prev.getUTCFullYear() !== d.getUTCFullYear()) {
          label += "\n" + d.getUTCFullYear();
        }
      } else {
        label = clock(d);
        if (prev === null || prev.getUTCDate() !== d.getUTCDate() ||
            prev.getUTCMonth() !== d.getUTCMonth()) {
          label += "\n" + day(d);
        }
      }
      prev = d;
      return label;
    });
  }

  // Round steps only: $1, $2, $5, $10, $25, $50, … ; prices in 0.05s and up.
  var MONEY_STEPS = [0.01, 0.02, 0.05, 0.1, 0.25, 0.5];
  [1, 10, 100, 1000, 10000, 100000].forEach(function (m) {
    MONEY_STEPS.push(m, 2 * m, 2.5 * m, 5 * m);
  });
  var PRICE_STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5];

  function moneyRange(baseline) {
    return function (u, min, max) {
      if (min == null || max == null) { min = max = baseline || 0; }
      if (baseline != null) { min = Math.min(min, baseline); max = Math.max(max, baseline); }
      var spread = max - min;
      var padding = spread > 0 ? spread * 0.08 : Math.max(Math.abs(max) * 0.005, 1);
      return [min - padding, max + padding];
    };
  }

  // The dashed start line ($10,000), labelled at its left end.
  function baselinePlugin(baseline) {
    return {
      hooks: {
        draw: function (u) {
          var y = Math.round(u.valToPos(baseline, "y", true)) + 0.5;
          var ctx = u.ctx;
          var left = u.bbox.left;
          var right = left + u.bbox.width;
          if (y < u.bbox.top || y > u.bbox.top + u.bbox.height) return;
          ctx.save();
          ctx.strokeStyle = "#8a93a6";
          ctx.lineWidth = Math.max(1, devicePixelRatio);
          ctx.setLineDash([4 * devicePixelRatio, 4 * devicePixelRatio]);
          ctx.beginPath();
          ctx.moveTo(left, y);
          ctx.lineTo(right, y);
          ctx.stroke();
          ctx.setLineDash([]);
          ctx.fillStyle = MUTED;
          ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
          ctx.textAlign = "left";
          ctx.textBaseline = "bottom";
          ctx.fillText("start " + money(baseline).replace(".00", ""), left + 4 * devicePixelRatio,
            y - 2 * devicePixelRatio);
          ctx.restore();
        },
      },
    };
  }

  // A tooltip inside the plot: the cursor's time and each series' value there, highest first.
  function tooltipPlugin(format) {
    var tip;
    return {
      hooks: {
        init: function (u) {
          tip = document.createElement("div");
          tip.className = "chart-tip";
          tip.hidden = true;
          u.over.appendChild(tip);
          u.over.addEventListener("mouseleave", function () { tip.hidden = true; });
        },
        setCursor: function (u) {
          var idx = u.cursor.idx;
          if (idx == null || u.cursor.left == null || u.cursor.left < 0) {
            tip.hidden = true;
            return;
          }
          var rows = [];
          for (var i = 1; i < u.series.length; i++) {
            var v = u.data[i][idx];
            if (v != null && u.series[i].show) {
              rows.push({ label: u.series[i].label, colour: u.series[i]._colour, value: v });
            }
          }
          if (!rows.length) { tip.hidden = true; return; }
          rows.sort(function (a, b) { return b.value - a.value; });
          tip.replaceChildren();
          var when = document.createElement("div");
          when.className = "chart-tip-time";
          when.textContent = stamp(u.data[0][idx]);
          tip.appendChild(when);
          rows.forEach(function (r) {
            var row = document.createElement("div");
            var swatch = document.createElement("span");
            swatch.className = "swatch";
            swatch.style.setProperty("--c", r.colour);
            var name = document.createElement("span");
            name.textContent = r.label + " ";
            var value = document.createElement("b");
            value.textContent = format(r.value);
            row.append(swatch, name, value);
            tip.appendChild(row);
          });
          tip.hidden = false;
          var width = u.over.clientWidth;
          var x = u.cursor.left;
          var tipWidth = tip.offsetWidth;
          var left = x + 12 + tipWidth > width ? x - 12 - tipWidth : x + 12;
          tip.style.left = Math.max(0, left) + "px";
          tip.style.top = "4px";
        },
      },
    };
  }

  function heightFor(width) { return width < 520 ? 240 : 320; }

  function draw(container) {
    if (container.dataset.drawn) return;
    var source = document.getElementById(container.dataset.chart);
    if (!source || typeof uPlot === "undefined") return;
    var chart = JSON.parse(source.textContent);
    if (!chart.x.length) return;
    container.dataset.drawn = "1";
    var isMoney = chart.kind === "money";
    var format = isMoney ? money : price;
    var series = [{ value: function (u, v) { return v == null ? "" : stamp(v); } }];
    chart.series.forEach(function (s) {
      series.push({
        label: s.label,
        _colour: s.colour,
        stroke: s.colour,
        width: 1.8,
        dash: s.dashed ? [6, 4] : undefined,
        spanGaps: true,
        value: function (u, v) { return v == null ? "\u2014" : format(v); },
      });
    });
    var width = container.clientWidth || 320;
    var plugins = [tooltipPlugin(format)];
    if (isMoney && chart.baseline != null) plugins.push(baselinePlugin(chart.baseline));
    var opts = {
      width: width,
      height: heightFor(width),
      legend: { show: false },
      cursor: { y: false, drag: { x: false, y: false }, points: { size: 7 } },
      scales: {
        // A range's chart spans its whole window, however few marks fall in it: 10M and 1H
        // are told apart by their axes even when one snapshot is all they hold.
        x: chart.from != null ? { time: true, range: [chart.from, chart.to] } : { time: true },
        y: isMoney ? { range: moneyRange(chart.baseline) } : { range: [0, 1] },
      },
      axes: [
        {
          stroke: MUTED,
          grid: { stroke: GRID, width: 1 },
          ticks: { stroke: GRID, width: 1 },
          space: 64,
          values: timeTicks,
          font: "11px system-ui, sans-serif",
        },
        {
          stroke: MUTED,
          grid: { stroke: GRID, width: 1 },
          ticks: { stroke: GRID, width: 1 },
          incrs: isMoney ? MONEY_STEPS : PRICE_STEPS,
          space: 36,
          size: isMoney ? 66 : 44,
          font: "11px system-ui, sans-serif",
          values: function (u, splits, axisIdx, space, step) {
            return splits.map(function (v) {
              return isMoney ? moneyTick(v, step) : Math.round(v * 100) + "%";
            });
          },
        },
      ],
      series: series,
      plugins: plugins,
    };
    var data = [chart.x].concat(chart.series.map(function (s) { return s.y; }));
    var plot = new uPlot(opts, data, container);
    if (typeof ResizeObserver !== "undefined") {
      var last = width;
      new ResizeObserver(function () {
        var w = container.clientWidth;
        if (w && w !== last) {
          last = w;
          plot.setSize({ width: w, height: heightFor(w) });
        }
      }).observe(container);
    }
  }

  function drawAll() {
    document.querySelectorAll("[data-chart]").forEach(draw);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
