/* Draw the site's charts with uPlot (static/vendor/uplot/).

   Each chart is a <div data-chart="ID"> whose series come, already downsampled by the server,
   in <script type="application/json" id="ID"> (arena/views/charts.py):
     {kind: "money"|"price", baseline: 10000|null, scale: "linear"|"return", from, to,
      x: [epoch seconds], series: [{label, colour, dashed, y: [number|null]}]}
   Times are shown in UTC, like the rest of the site. Labels are set as text, never as HTML.
   A money chart reads in USD or as the return since the start on a log scale (the
   .chart-scales buttons switch, and a chart of several lines opens on the return: one agent
   that doubled would flatten the rest). Wide charts label each line at its right end; pointing
   at a line or its key, or tapping the key, brings that line forward.
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
  // A return written as a signed percentage: +54.3%, −12.8%, 0%.
  function returnText(ratio, digits) {
    var pct = (ratio - 1) * 100;
    var text = Math.abs(pct).toFixed(digits);
    if (Number(text) === 0) return "0%";
    return (pct < 0 ? MINUS : "+") + text + "%";
  }
  // The lowest ratio a log axis can draw: a value of $0 sits on the −99% line (the tooltip and
  // the key still give the value itself).
  var RATIO_FLOOR = 0.01;
  // Return ticks (as ratios to the start), from which a log axis takes those that fit.
  var RATIO_TICKS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9,
    0.95, 1, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.4, 1.5, 1.75, 2, 2.5, 3, 4, 5, 7.5, 10, 20, 50,
    100];

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

  function ratioRange(u, min, max) {
    if (min == null || max == null) { min = max = 1; }
    min = Math.min(min, 1);
    max = Math.max(max, 1);
    var spread = Math.log(max / min) || Math.log(1.1);
    return [min / Math.exp(spread * 0.08), max * Math.exp(spread * 0.08)];
  }

  // The return axis' ticks: 0% always, then outward from it every listed ratio at least
  // `space` pixels from the last one kept, so a log axis never crowds its labels.
  function ratioSplits(space) {
    return function (u, axisIdx, min, max) {
      var kept = [1];
      [1, -1].forEach(function (direction) {
        var last = u.valToPos(1, "y");
        var ticks = RATIO_TICKS.filter(function (r) {
          return direction > 0 ? r > 1 && r <= max : r < 1 && r >= min;
        });
        if (direction < 0) ticks.reverse();
        ticks.forEach(function (r) {
          var at = u.valToPos(r, "y");
          if (Math.abs(at - last) >= space) { kept.push(r); last = at; }
        });
      });
      return kept.sort(function (a, b) { return a - b; });
    };
  }

  // Each line's name at its right end, in the gutter the chart keeps for them, moved apart
  // where two would overlap; the names' places are kept on the container for the browser
  // walk to check. A line brought forward has its name in bold, the others fade with it.
  var LABEL_FONT = 11;
  var LABEL_GAP = 14;
  function labelsPlugin(container, gutter) {
    return {
      hooks: {
        draw: function (u) {
          var dpr = devicePixelRatio;
          var top = u.bbox.top / dpr;
          var bottom = (u.bbox.top + u.bbox.height) / dpr;
          var labels = [];
          for (var i = 1; i < u.series.length; i++) {
            var s = u.series[i];
            if (!s.show) continue;
            var data = u.data[i];
            var j = data.length - 1;
            while (j >= 0 && data[j] == null) j--;
            if (j < 0) continue;
            labels.push({ index: i, text: s.label, colour: s._colour,
              want: u.valToPos(data[j], "y") + u.bbox.top / dpr });
          }
          labels.sort(function (a, b) { return a.want - b.want; });
          labels.forEach(function (l, k) {
            l.y = Math.max(l.want, top + LABEL_GAP / 2, k ? labels[k - 1].y + LABEL_GAP : -Infinity);
          });
          for (var k = labels.length - 1; k >= 0; k--) {
            var limit = k === labels.length - 1 ? bottom - LABEL_GAP / 2 : labels[k + 1].y - LABEL_GAP;
            labels[k].y = Math.min(labels[k].y, limit);
          }
          var faded = u.series.some(function (s) { return s.alpha != null && s.alpha < 1; });
          var ctx = u.ctx;
          var x = (u.bbox.left + u.bbox.width) / dpr + 6;
          ctx.save();
          ctx.textAlign = "left";
          ctx.textBaseline = "middle";
          labels.forEach(function (l) {
            var s = u.series[l.index];
            ctx.globalAlpha = s.alpha == null ? 1 : s.alpha;
            ctx.font = (faded && s.alpha === 1 ? "600 " : "") + LABEL_FONT * dpr +
              "px system-ui, sans-serif";
            ctx.fillStyle = l.colour;
            ctx.fillText(fitted(ctx, l.text, (gutter - 8) * dpr), x * dpr, l.y * dpr);
          });
          ctx.restore();
          container.forecasterLabels = labels.map(function (l) {
            return { label: l.text, y: l.y, top: top, bottom: bottom };
          });
        },
      },
    };
  }

  // The text cut to `width` device pixels with an ellipsis.
  function fitted(ctx, text, width) {
    if (ctx.measureText(text).width <= width) return text;
    var cut = text;
    while (cut.length > 1 && ctx.measureText(cut + "\u2026").width > width) cut = cut.slice(0, -1);
    return cut + "\u2026";
  }

  // Names need a wide plot and a row each: a plot too short for every name has the key
  // below it as the only guide (a model's chart of every cohort).
  var PLOT_FURNITURE = 70;
  function gutterFor(chart, width) {
    if (chart.series.length < 2 || width < 560) return 0;
    if (chart.series.length * LABEL_GAP > heightFor(width) - PLOT_FURNITURE) return 0;
    var ctx = document.createElement("canvas").getContext("2d");
    ctx.font = LABEL_FONT + "px system-ui, sans-serif";
    var widest = 0;
    chart.series.forEach(function (s) { widest = Math.max(widest, ctx.measureText(s.label).width); });
    return Math.min(Math.ceil(widest) + 14, 150);
  }

  // The dashed start line ($10,000, or 0% on the return axis), labelled at its left end.
  function baselinePlugin(at, text) {
    return {
      hooks: {
        draw: function (u) {
          var y = Math.round(u.valToPos(at, "y", true)) + 0.5;
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
          if (!text) { ctx.restore(); return; }
          ctx.fillStyle = MUTED;
          ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
          ctx.textAlign = "left";
          ctx.textBaseline = "bottom";
          ctx.fillText(text, left + 4 * devicePixelRatio, y - 2 * devicePixelRatio);
          ctx.restore();
        },
      },
    };
  }

  // A tooltip inside the plot: the cursor's time and each series' value there, highest first.
  // `value(i, idx)` is series i's own value (in USD or a price), whatever the axis draws.
  function tooltipPlugin(format, value) {
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
            var v = value(i, idx);
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
            var shown = document.createElement("b");
            shown.textContent = format(r.value);
            row.append(swatch, name, shown);
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

  function xScale(chart) {
    // A range's chart spans its whole window, however few marks fall in it: 10M and 1H are
    // told apart by their axes even when one snapshot is all they hold.
    return chart.from != null ? { time: true, range: [chart.from, chart.to] } : { time: true };
  }

  function timeAxis() {
    return {
      stroke: MUTED,
      grid: { stroke: GRID, width: 1 },
      ticks: { stroke: GRID, width: 1 },
      space: 64,
      values: timeTicks,
      font: "11px system-ui, sans-serif",
    };
  }

  // The vertical scale and axis: USD, a price, or the return on a log scale.
  function valueAxis(chart, scale) {
    var axis = {
      stroke: MUTED,
      grid: { stroke: GRID, width: 1 },
      ticks: { stroke: GRID, width: 1 },
      font: "11px system-ui, sans-serif",
    };
    if (scale === "return") {
      axis.splits = ratioSplits(24);
      axis.size = 56;
      // The splits already keep their distance: uPlot's own thinning of log ticks is not wanted.
      axis.filter = function (u, splits) { return splits; };
      axis.values = function (u, splits) {
        return splits.map(function (r) { return r == null ? "" : returnText(r, 0); });
      };
      return { scale: { distr: 3, log: 10, range: ratioRange }, axis: axis };
    }
    var isMoney = chart.kind === "money";
    axis.incrs = isMoney ? MONEY_STEPS : PRICE_STEPS;
    axis.space = 36;
    axis.size = isMoney ? 66 : 44;
    axis.values = function (u, splits, axisIdx, space, step) {
      return splits.map(function (v) {
        return isMoney ? moneyTick(v, step) : Math.round(v * 100) + "%";
      });
    };
    return { scale: { range: isMoney ? moneyRange(chart.baseline) : [0, 1] }, axis: axis };
  }

  function plotFor(container, chart, scale, width) {
    var isMoney = chart.kind === "money";
    var onReturn = isMoney && scale === "return" && chart.baseline;
    // The tooltip gives the value and, on a money chart, the return it makes.
    var format = !isMoney ? price : function (v) {
      return chart.baseline ? money(v) + " (" + returnText(v / chart.baseline, 1) + ")" : money(v);
    };
    var series = [{ value: function (u, v) { return v == null ? "" : stamp(v); } }];
    var many = chart.series.length > 2;
    chart.series.forEach(function (s) {
      series.push({
        label: s.label,
        _colour: s.colour,
        stroke: s.colour,
        width: 1.8,
        dash: s.dashed ? [6, 4] : undefined,
        spanGaps: true,
        // Ten lines' marks would hide the lines; one or two keep them (the cursor marks all).
        points: many ? { show: false } : undefined,
      });
    });
    var gutter = gutterFor(chart, width);
    var plugins = [tooltipPlugin(format, function (i, idx) { return chart.series[i - 1].y[idx]; })];
    if (isMoney && chart.baseline != null) {
      var start = "start " + money(chart.baseline).replace(".00", "");
      // On the return axis the 0% tick names the start line.
      plugins.push(onReturn ? baselinePlugin(1, "") : baselinePlugin(chart.baseline, start));
    }
    if (gutter) plugins.push(labelsPlugin(container, gutter));
    if (chart.series.length > 1) plugins.push(pinPlugin(container));
    var vertical = valueAxis(chart, onReturn ? "return" : "linear");
    var opts = {
      width: width,
      height: heightFor(width),
      padding: [null, gutter || null, null, null],
      legend: { show: false },
      // Pointing near a line brings it forward and fades the others.
      focus: { alpha: 0.22 },
      cursor: {
        y: false,
        drag: { x: false, y: false },
        points: { size: 7 },
        focus: { prox: chart.series.length > 1 ? 16 : -1 },
      },
      scales: { x: xScale(chart), y: vertical.scale },
      axes: [timeAxis(), vertical.axis],
      series: series,
      plugins: plugins,
    };
    var ys = chart.series.map(function (s) {
      if (!onReturn) return s.y;
      return s.y.map(function (v) {
        return v == null ? null : Math.max(v / chart.baseline, RATIO_FLOOR);
      });
    });
    return new uPlot(opts, [chart.x].concat(ys), container);
  }

  // uPlot lets go of the focused line whenever the pointer is far from every line (or leaves
  // the plot); a line kept forward from the key is taken back then.
  function pinPlugin(container) {
    return {
      hooks: {
        setSeries: function (u, i, opts) {
          var pinned = container.forecasterPinned;
          if (i == null && opts && opts.focus && pinned != null) {
            u.setSeries(pinned, { focus: true });
          }
        },
      },
    };
  }

  // The key under the chart: pointing at a name (or focusing it) brings its line forward;
  // a tap or Enter keeps it forward until the next one.
  function wireKey(container, figure, chart) {
    var items = figure.querySelectorAll(".chart-summary li[data-series]");
    if (chart.series.length < 2) return;
    function bring(i) {
      var plot = container.forecasterPlot;
      if (plot) plot.setSeries(i, { focus: true });
    }
    items.forEach(function (item) {
      var i = Number(item.dataset.series);
      item.tabIndex = 0;
      item.setAttribute("role", "button");
      item.setAttribute("aria-pressed", "false");
      item.title = "Bring this line forward";
      item.addEventListener("mouseenter", function () { bring(i); });
      item.addEventListener("focus", function () { bring(i); });
      item.addEventListener("mouseleave", function () { bring(container.forecasterPinned); });
      item.addEventListener("blur", function () { bring(container.forecasterPinned); });
      function toggle() {
        var pinned = container.forecasterPinned === i ? null : i;
        container.forecasterPinned = pinned;
        items.forEach(function (other) {
          other.setAttribute("aria-pressed", String(Number(other.dataset.series) === pinned));
        });
        bring(pinned);
      }
      item.addEventListener("click", toggle);
      item.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); }
      });
    });
  }

  function draw(container) {
    if (container.dataset.drawn) return;
    var source = document.getElementById(container.dataset.chart);
    if (!source || typeof uPlot === "undefined") return;
    var chart = JSON.parse(source.textContent);
    if (!chart.x.length) return;
    container.dataset.drawn = "1";
    var figure = container.closest("figure") || container.parentNode;
    var scale = chart.kind === "money" && chart.scale === "return" ? "return" : "linear";
    var width = container.clientWidth || 320;
    function build() {
      if (container.forecasterPlot) container.forecasterPlot.destroy();
      container.forecasterLabels = [];
      container.dataset.scale = scale;
      var plot = plotFor(container, chart, scale, width);
      container.forecasterPlot = plot;
      // A line kept forward from the key stays forward on the new axis (once the plot has
      // drawn: uPlot sets its series' focus on its first draw).
      if (container.forecasterPinned != null) {
        requestAnimationFrame(function () {
          if (container.forecasterPlot === plot) {
            plot.setSeries(container.forecasterPinned, { focus: true });
          }
        });
      }
    }
    build();
    var switcher = figure.querySelector(".chart-scales");
    if (switcher && chart.baseline) {
      var buttons = switcher.querySelectorAll("button[data-scale]");
      function mark() {
        buttons.forEach(function (b) { b.setAttribute("aria-pressed", String(b.dataset.scale === scale)); });
      }
      buttons.forEach(function (b) {
        b.addEventListener("click", function () {
          if (b.dataset.scale === scale) return;
          scale = b.dataset.scale;
          mark();
          build();
        });
      });
      mark();
      switcher.hidden = false;
    }
    wireKey(container, figure, chart);
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () {
        var w = container.clientWidth;
        if (!w || w === width) return;
        // The names' gutter comes and goes with the width: a new plot, not a new size.
        var rebuild = (gutterFor(chart, w) > 0) !== (gutterFor(chart, width) > 0);
        width = w;
        if (rebuild) build();
        else container.forecasterPlot.setSize({ width: w, height: heightFor(w) });
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
