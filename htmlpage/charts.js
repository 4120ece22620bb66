// charts.js draws the charts of an oipkit HTML report with uPlot. The
// page embeds the chart specs (htmlpage.Chart, as JSON) in
// <script id="oipkit-charts" type="application/json">; each is drawn into
// the element whose id is the spec's id. When all are drawn, the <html>
// element gets data-charts="N" and data-ready="1" (the browser check waits
// for that); a chart that fails shows its error in place and logs it.
(function () {
  "use strict";
  var palette = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#1b7c83", "#6e7781", "#fb8500", "#3a0ca3",
    "#2da44e", "#e16f24", "#57606a", "#a475f9", "#0550ae", "#a40e26"];

  function sig(v) {
    var a = Math.abs(v);
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, "");
    if (a >= 1) return v.toFixed(2).replace(/\.?0+$/, "");
    return v.toPrecision(2).replace(/\.?0+$/, "");
  }
  // Formatters by unit; values arrive in that unit.
  var fmt = {
    ms: function (v) {
      if (v == null) return "-";
      if (v === 0) return "0";
      if (Math.abs(v) >= 1000) return sig(v / 1000) + "s";
      if (Math.abs(v) >= 1) return sig(v) + "ms";
      return sig(v * 1000) + "µs";
    },
    s: function (v) { return v == null ? "-" : sig(v) + "s"; },
    rps: function (v) {
      if (v == null) return "-";
      if (Math.abs(v) >= 1e6) return sig(v / 1e6) + "M/s";
      if (Math.abs(v) >= 1e4) return sig(v / 1e3) + "k/s";
      return sig(v) + "/s";
    },
    count: function (v) { return v == null ? "-" : String(Math.round(v)); },
    // A percentile spectrum's x is 1/(1-p): 10 is p90, 1000 is p99.9.
    pct: function (v) {
      if (v == null) return "-";
      var p = 100 * (1 - 1 / v);
      if (p <= 0) return "0%";
      return String(+p.toPrecision(8)).replace(/(\.\d*?[1-9])0+$/, "$1") + "%";
    },
    plain: function (v) { return v == null ? "-" : sig(v); }
  };
  function formatter(axis) { return fmt[axis && axis.unit] || fmt.plain; }

  function axisValues(axis) {
    var f = formatter(axis);
    return function (u, splits) {
      return splits.map(function (v) {
        if (v == null) return "";
        if (axis.log) {
          var e = Math.log10(v), m = v / Math.pow(10, Math.floor(e + 1e-9));
          if (axis.unit === "pct" && Math.abs(m - 1) > 1e-6) return "";
          if (Math.abs(m - 1) > 1e-6 && Math.abs(m - 2) > 1e-6 && Math.abs(m - 5) > 1e-6) return "";
        }
        return f(v);
      });
    };
  }

  function scale(axis) {
    var s = { auto: true };
    if (axis && axis.log) { s.distr = 3; s.log = 10; }
    if (axis && axis.fromZero && !axis.log) {
      s.range = function (u, min, max) { return [0, max > 0 ? max : 1]; };
    }
    return s;
  }

  function seriesOpts(s, i, spec) {
    var color = s.color || palette[i % palette.length];
    var o = {
      label: s.label,
      stroke: color,
      width: s.style === "bars" ? 0 : 2,
      scale: s.axis === 2 ? "y2" : "y",
      spanGaps: false,
      value: function (u, v) { return formatter(s.axis === 2 ? spec.y2 : spec.y)(v); },
      points: { show: s.style === "points" || spec.mode === "xy", size: 6, fill: color }
    };
    if (s.style === "dashed") o.dash = [6, 4];
    if (s.style === "bars") {
      o.fill = color + "99";
      o.paths = uPlot.paths.bars({ size: [0.6, 40] });
      o.points = { show: false };
    }
    if (spec.mode === "xy") {
      o.facets = [{ scale: "x", auto: true }, { scale: o.scale, auto: true }];
      o.paths = uPlot.paths.linear();
    }
    return o;
  }

  // overlay draws reference lines (an SLO bound, sweep levels) and
  // labelled points (the knee).
  function overlay(spec) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox, dpr = window.devicePixelRatio || 1;
      ctx.save();
      ctx.font = (11 * dpr) + "px sans-serif";
      (spec.lines || []).forEach(function (l) {
        ctx.strokeStyle = l.color || "#6e7781";
        ctx.fillStyle = l.color || "#6e7781";
        ctx.setLineDash([5 * dpr, 4 * dpr]);
        ctx.lineWidth = dpr;
        ctx.beginPath();
        if (l.axis === "y") {
          var y = u.valToPos(l.value, l.scale || "y", true);
          if (!isFinite(y) || y < b.top || y > b.top + b.height) return;
          ctx.moveTo(b.left, y);
          ctx.lineTo(b.left + b.width, y);
          ctx.stroke();
          ctx.fillText(l.label || "", b.left + 4 * dpr, y - 3 * dpr);
        } else {
          var x = u.valToPos(l.value, "x", true);
          if (!isFinite(x) || x < b.left || x > b.left + b.width) return;
          ctx.moveTo(x, b.top);
          ctx.lineTo(x, b.top + b.height);
          ctx.stroke();
          ctx.fillText(l.label || "", x + 3 * dpr, b.top + 11 * dpr);
        }
      });
      ctx.setLineDash([]);
      (spec.points || []).forEach(function (p) {
        var x = u.valToPos(p.x, "x", true), y = u.valToPos(p.y, p.scale || "y", true);
        if (!isFinite(x) || !isFinite(y)) return;
        ctx.strokeStyle = p.color || "#1d2430";
        ctx.lineWidth = 2 * dpr;
        ctx.beginPath();
        ctx.arc(x, y, 8 * dpr, 0, 2 * Math.PI);
        ctx.stroke();
        ctx.fillStyle = p.color || "#1d2430";
        ctx.fillText(p.label || "", x + 10 * dpr, y - 10 * dpr);
      });
      ctx.restore();
    };
  }

  function draw(spec, el) {
    var axes = [
      { label: spec.x.label, values: axisValues(spec.x), size: 40 },
      { label: spec.y.label, values: axisValues(spec.y), size: 64 }
    ];
    var scales = { x: scale(spec.x), y: scale(spec.y) };
    scales.x.time = false;
    if (spec.y2) {
      axes.push({ label: spec.y2.label, values: axisValues(spec.y2), scale: "y2", side: 1, grid: { show: false }, size: 56 });
      scales.y2 = scale(spec.y2);
    }
    var series = [{ label: spec.x.label, value: function (u, v) { return formatter(spec.x)(v); } }];
    var data;
    if (spec.mode === "xy") {
      data = [null];
      spec.series.forEach(function (s, i) {
        series.push(seriesOpts(s, i, spec));
        data.push([s.x || [], s.y || []]);
      });
    } else {
      data = [spec.xValues];
      spec.series.forEach(function (s, i) {
        series.push(seriesOpts(s, i, spec));
        data.push(s.y || []);
      });
    }
    var width = Math.max(320, el.clientWidth || 600);
    var opts = {
      width: width,
      height: spec.height || 300,
      scales: scales,
      axes: axes,
      series: series,
      legend: { live: spec.mode !== "xy" },
      cursor: spec.mode === "xy" ? { drag: { x: false, y: false } } : { drag: { x: true, y: false } },
      hooks: { draw: [overlay(spec)] }
    };
    if (spec.mode === "xy") opts.mode = 2;
    var plot = new uPlot(opts, data, el);
    window.addEventListener("resize", function () {
      plot.setSize({ width: Math.max(320, el.clientWidth || 600), height: spec.height || 300 });
    });
  }

  function run() {
    var holder = document.getElementById("oipkit-charts");
    var specs = holder ? JSON.parse(holder.textContent) : [];
    var drawn = 0;
    specs.forEach(function (spec) {
      var box = document.getElementById(spec.id);
      if (!box) { console.error("oipkit chart " + spec.id + ": no element"); return; }
      var el = box.querySelector(".plot") || box;
      try {
        draw(spec, el);
        drawn++;
      } catch (e) {
        el.innerHTML = '<p class="chart-error"></p>';
        el.firstChild.textContent = "chart " + spec.id + " failed: " + e;
        console.error("oipkit chart " + spec.id + ": " + (e && e.stack || e));
      }
    });
    document.documentElement.setAttribute("data-charts", String(drawn));
    document.documentElement.setAttribute("data-ready", "1");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
