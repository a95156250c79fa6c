/* predictd console (server/ui/srv_ui.c serves it; docs/console.md).
 * Read-only: it GETs /v1/models, each model's status and monitoring, and
 * /ui/api/traffic, every 2 seconds. Every text from the daemon (model
 * names, messages, feature values) goes into the page as textContent or an
 * attribute value set through the DOM: nothing is parsed as markup. */
"use strict";
(function () {
  var SVGNS = "http://www.w3.org/2000/svg";
  var POLL_MS = 2000;

  function el(tag, attrs) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, c) {
    if (c === null || c === undefined) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(parent, x); }); return; }
    parent.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c !== null && c !== undefined)
        e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  /* Replaces the content of #id with node. A focused region in it (a table
   * that scrolls sideways) is focused again in the new content, at the same
   * scroll position: a refresh must not throw a keyboard user's focus away. */
  function replace(id, node) {
    var box = document.getElementById(id), a = document.activeElement;
    var label = a && a !== box && box.contains(a) ? a.getAttribute("aria-label") : null;
    var left = label ? a.scrollLeft : 0;
    while (box.firstChild) box.removeChild(box.firstChild);
    add(box, node);
    if (!label) return;
    var same = Array.prototype.filter.call(box.querySelectorAll("[aria-label]"), function (e) {
      return e.getAttribute("aria-label") === label;
    })[0];
    if (same) {
      same.focus({ preventScroll: true });
      same.scrollLeft = left;
    }
  }
  function getJSON(path) {
    return fetch(path, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.json().then(function (j) { return { status: r.status, body: j }; },
                           function () { return { status: r.status, body: null }; });
    });
  }
  function fmt(x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return "—";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }
  function model_path(m) { return "/v1/models/" + encodeURIComponent(m); }

  /* ------------------------------------------------------------ Models */
  function target_text(t) {
    return t.target + (t.version !== null && t.version !== String(t.target) ? " (v" + t.version + ")" : "");
  }
  function render_models(list, statuses) {
    var models = (list && list.models) || [];
    if (!models.length) return el("p", { "class": "muted" }, "No models.");
    var table = el("table", { id: "models-table" },
      el("caption", { "class": "muted" }, "Every model, its versions and how its traffic is routed"),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Model"),
        el("th", { scope: "col" }, "Versions (state)"), el("th", { scope: "col" }, "Default"),
        el("th", { scope: "col" }, "Labels"), el("th", { scope: "col" }, "Traffic split"),
        el("th", { scope: "col" }, "Shadow"))));
    var tb = el("tbody");
    models.forEach(function (m) {
      var st = statuses[m.name] || {};
      var vers = el("ul", { "class": "versions" });
      (st.model_version_status || m.versions || []).forEach(function (v) {
        var msg = v.status && v.status.error_message;
        vers.appendChild(el("li", { "data-version": v.version, "data-state": v.state },
          "v" + v.version + " ", el("span", { "class": "state state-" + v.state }, v.state),
          msg ? el("span", { "class": "bad msg" }, " — " + (v.status.error_code || "") + ": " + msg) : null));
      });
      var labels = Object.keys(m.labels || {}).map(function (k) { return k + " → v" + m.labels[k]; });
      var split = (m.traffic_split || []).map(function (s) {
        return el("div", { "class": "split", "data-target": s.target, "data-version": s.version,
                           "data-percent": s.percent }, target_text(s) + ": " + s.percent + "%");
      });
      var shadow = m.shadow ? el("div", { "class": "shadow", "data-version": m.shadow.version },
        target_text(m.shadow) + ": " + m.shadow.percent + "% copied") : "none";
      tb.appendChild(el("tr", { "data-model": m.name },
        el("th", { scope: "row" }, m.name), el("td", {}, vers),
        el("td", {}, m.default_version === null ? "none" : "v" + m.default_version),
        el("td", {}, labels.length ? labels.join(", ") : "none"),
        el("td", {}, split.length ? split : "none (the default version takes every request)"),
        el("td", {}, shadow)));
    });
    table.appendChild(tb);
    var cfg = list.config || {};
    return [el("div", { "class": "wrap", tabindex: "0", role: "region", "aria-label": "Models (scrolls sideways)" }, table),
            el("p", { "class": "muted" }, "Config generation " + cfg.generation + ", last reload: " +
               cfg.last_reload + (cfg.last_error ? " (" + cfg.last_error + ")" : ""))];
  }

  /* ----------------------------------------------------------- Traffic */
  /* [t seconds ago, value] series from consecutive snapshots */
  function quantile(le, buckets, q) {
    var total = buckets.reduce(function (a, b) { return a + b; }, 0);
    if (!total) return null;
    var want = q * total, seen = 0;
    for (var i = 0; i < buckets.length; i++) {
      seen += buckets[i];
      if (seen >= want) return le[i];
    }
    return le[le.length - 1]; /* above the last bucket: at least that */
  }
  function line_chart(title, unit, series, id) {
    var W = 320, H = 150, L = 44, B = 22, T = 8, R = 8;
    var all = [];
    series.forEach(function (s) { all = all.concat(s.points); });
    var fig = el("figure", { "class": "chart", id: id });
    fig.appendChild(el("figcaption", {}, title));
    if (!all.length) { fig.appendChild(el("p", { "class": "muted" }, "No data yet.")); return fig; }
    var tmin = Math.min.apply(null, all.map(function (p) { return p[0]; }));
    var tmax = Math.max.apply(null, all.map(function (p) { return p[0]; }));
    var ymax = Math.max.apply(null, all.map(function (p) { return p[1]; }));
    if (!(ymax > 0)) ymax = 1;
    if (tmax === tmin) tmax = tmin + 1;
    function X(t) { return L + (t - tmin) / (tmax - tmin) * (W - L - R); }
    function Y(v) { return T + (1 - v / ymax) * (H - T - B); }
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title });
    svg.appendChild(sv("title", {}, title));
    svg.appendChild(sv("line", { "class": "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    svg.appendChild(sv("line", { "class": "axis", x1: L, y1: T, x2: L, y2: H - B }));
    svg.appendChild(sv("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, fmt(ymax, ymax < 10 ? 2 : 0)));
    svg.appendChild(sv("text", { x: L - 4, y: H - B, "text-anchor": "end" }, "0"));
    svg.appendChild(sv("text", { x: L, y: H - 6 }, "-" + Math.round(tmax - tmin) + " s"));
    svg.appendChild(sv("text", { x: W - R, y: H - 6, "text-anchor": "end" }, "now (" + unit + ")"));
    var legend = el("div", { "class": "legend" });
    series.forEach(function (s, i) {
      var cls = "s" + (i % 4);
      var pts = s.points.map(function (p) { return X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); });
      svg.appendChild(sv("polyline", { "class": cls + " series", points: pts.join(" "),
                                       "data-name": s.name, "data-points": s.points.length }));
      s.points.forEach(function (p) {
        svg.appendChild(sv("circle", { "class": cls + " point", cx: X(p[0]).toFixed(1),
                                       cy: Y(p[1]).toFixed(1), r: 1.8 }));
      });
      legend.appendChild(el("span", {}, el("span", { "class": "sw sw-" + cls, "aria-hidden": "true" }), s.name));
    });
    fig.appendChild(svg);
    fig.appendChild(legend);
    return fig;
  }
  function render_traffic(tr) {
    var snaps = (tr && tr.snapshots) || [];
    if (snaps.length < 2) return el("p", { "class": "muted" }, "Waiting for two snapshots…");
    var now = snaps[snaps.length - 1].t_ms;
    var keys = {}, rps = {}, p50 = {}, p90 = {}, p99 = {}, errs = {}, bsize = [], bqueue = [], qdepth = [], wworkers = [], wbatch = [];
    function key_of(x) { return (x.model || "(unknown model)") + (x.version >= 0 ? " v" + x.version : ""); }
    function push(map, k, p) { (map[k] = map[k] || []).push(p); }
    for (var i = 1; i < snaps.length; i++) {
      var a = snaps[i - 1], b = snaps[i];
      var dt = (b.t_ms - a.t_ms) / 1000, t = (b.t_ms - now) / 1000;
      if (dt <= 0) continue;
      var le = b.metrics.le, prev = {};
      a.metrics.hists.forEach(function (h) { prev[key_of(h) + "|" + h.method + "|" + h.protocol] = h; });
      var per = {};
      b.metrics.hists.forEach(function (h) {
        var k = key_of(h), p = prev[k + "|" + h.method + "|" + h.protocol];
        var d = per[k] = per[k] || { n: 0, buckets: le.map(function () { return 0; }) };
        d.n += h.count - (p ? p.count : 0);
        h.buckets.forEach(function (c, j) { d.buckets[j] += c - (p ? p.buckets[j] : 0); });
      });
      Object.keys(per).forEach(function (k) {
        keys[k] = 1;
        push(rps, k, [t, per[k].n / dt]);
        if (per[k].n > 0) {
          push(p50, k, [t, 1000 * quantile(le, per[k].buckets, 0.5)]);
          push(p90, k, [t, 1000 * quantile(le, per[k].buckets, 0.9)]);
          push(p99, k, [t, 1000 * quantile(le, per[k].buckets, 0.99)]);
        }
      });
      var pe = {};
      a.metrics.series.forEach(function (s) { pe[key_of(s) + "|" + s.method + "|" + s.protocol + "|" + s.code] = s.count; });
      var byCode = {};
      b.metrics.series.forEach(function (s) {
        if (s.code < 400) return;
        var d = s.count - (pe[key_of(s) + "|" + s.method + "|" + s.protocol + "|" + s.code] || 0);
        byCode[s.code] = (byCode[s.code] || 0) + d;
      });
      Object.keys(byCode).forEach(function (c) { push(errs, "HTTP " + c, [t, byCode[c] / dt]); });
      var ab = a.metrics.batch, bb = b.metrics.batch;
      if (bb && ab) {
        var dn = bb.count - ab.count;
        bsize.push([t, dn > 0 ? (bb.sum - ab.sum) / dn : 0]);
        bqueue.push([t, bb.queue]);
      }
      qdepth.push([t, b.metrics.queue_depth]);
      var aw = a.metrics.queue_wait, bw = b.metrics.queue_wait;
      if (aw && bw) { /* the mean wait of the requests that left a queue in the interval */
        [["workers", wworkers], ["batch", wbatch]].forEach(function (q) {
          var n = bw[q[0]].count - aw[q[0]].count;
          if (n > 0) q[1].push([t, 1000 * (bw[q[0]].sum - aw[q[0]].sum) / n]);
        });
      }
    }
    function list(map) { return Object.keys(map).sort().map(function (k) { return { name: k, points: map[k] }; }); }
    var charts = el("div", { "class": "charts" },
      line_chart("Requests per second", "req/s", list(rps), "chart-rps"),
      line_chart("p50 latency", "ms", list(p50), "chart-p50"),
      line_chart("p90 latency", "ms", list(p90), "chart-p90"),
      line_chart("p99 latency", "ms", list(p99), "chart-p99"),
      line_chart("Errors by status (inference)", "per s", list(errs), "chart-errors"),
      line_chart("Mean batch size (merged batches)", "instances", [{ name: "batch size", points: bsize }], "chart-batch"),
      line_chart("Queue depth (workers' queue, batch queue)", "requests",
                 [{ name: "inference queue", points: qdepth }, { name: "batch queue", points: bqueue }], "chart-queue"),
      line_chart("Mean queue wait (for a worker, for a batch)", "ms",
                 [{ name: "workers' queue", points: wworkers }, { name: "batch queue", points: wbatch }], "chart-wait"));
    var note = el("p", { "class": "muted" }, "Latency quantiles are bucket upper bounds of predictd_version_request_duration_seconds; " +
                  snaps.length + " snapshots over " + Math.round((now - snaps[0].t_ms) / 1000) + " s.");
    return [charts, note];
  }

  /* -------------------------------------------------------------- Data */
  function hist_chart(f, id) {
    var w = f.window || f.current_window;
    if (!w) return null;
    var rows = w.histogram || w.values || [];
    if (!rows.length) return null;
    var ntr = rows.reduce(function (a, r) { return a + (r.training_count || 0); }, 0) || 1;
    var nsv = rows.reduce(function (a, r) { return a + r.count; }, 0) || 1;
    var W = 320, H = 110, B = 18, T = 6, n = rows.length, bw = (W - 8) / n;
    var ymax = 0;
    rows.forEach(function (r) { ymax = Math.max(ymax, (r.training_count || 0) / ntr, r.count / nsv); });
    if (!(ymax > 0)) ymax = 1;
    var title = f.name + ": training (blue, wide bars) and serving (orange, narrow bars) shares";
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title, id: id });
    svg.appendChild(sv("title", {}, title));
    rows.forEach(function (r, i) {
      var x = 4 + i * bw, ht = (r.training_count || 0) / ntr / ymax * (H - B - T), hs = r.count / nsv / ymax * (H - B - T);
      var label = r.value !== undefined ? r.value : fmt(r.low, 2) + "–" + fmt(r.high, 2);
      svg.appendChild(sv("rect", { "class": "bar-train", x: x.toFixed(1), y: (H - B - ht).toFixed(1), width: (bw * 0.9).toFixed(1), height: ht.toFixed(1) },
                         sv("title", {}, label + ": training " + fmt(100 * (r.training_count || 0) / ntr, 1) + "%")));
      svg.appendChild(sv("rect", { "class": "bar-serve", x: (x + bw * 0.25).toFixed(1), y: (H - B - hs).toFixed(1), width: (bw * 0.45).toFixed(1), height: hs.toFixed(1) },
                         sv("title", {}, label + ": serving " + fmt(100 * r.count / nsv, 1) + "%")));
    });
    var first = rows[0], last = rows[rows.length - 1];
    svg.appendChild(sv("text", { x: 4, y: H - 4 }, first.value !== undefined ? first.value : fmt(first.low, 1)));
    svg.appendChild(sv("text", { x: W - 4, y: H - 4, "text-anchor": "end" }, last.value !== undefined ? last.value : fmt(last.high, 1)));
    return el("figure", { "class": "hist" }, el("figcaption", {}, f.name), svg,
              el("div", { "class": "legend" }, el("span", {}, el("span", { "class": "sw sw-train", "aria-hidden": "true" }), "training"),
                 el("span", {}, el("span", { "class": "sw sw-serve", "aria-hidden": "true" }), "serving")));
  }
  function render_data(mons) {
    if (!mons.length) return el("p", { "class": "muted" }, "No monitored version (a model's config needs a \"monitoring\" key and its export training statistics).");
    return mons.map(function (m, mi) {
      var table = el("table", { "class": "features", "data-model": m.model, "data-version": m.version },
        el("caption", { "class": "muted" }, m.windows + " windows of " + (m.window_instances || "?") + " instances or " +
           m.window_seconds + " s; " + m.instances + " instances seen"),
        el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Feature"), el("th", { scope: "col" }, "Type"),
          el("th", { scope: "col" }, "Skew"), el("th", { scope: "col" }, "Drift"),
          el("th", { scope: "col" }, "Threshold"), el("th", { scope: "col" }, "Status"))));
      var tb = el("tbody"), figs = el("div", { "class": "charts" });
      m.features.forEach(function (f, fi) {
        var bad = [];
        if (f.skew_anomalous) bad.push("skewed");
        if (f.drift_anomalous) bad.push("drifting");
        tb.appendChild(el("tr", { "class": f.anomalous ? "anomalous" : "", "data-feature": f.name,
                                  "data-anomalous": f.anomalous ? "true" : "false" },
          el("th", { scope: "row" }, f.name), el("td", {}, f.type),
          el("td", { "class": f.skew_anomalous ? "bad" : "" }, fmt(f.skew)),
          el("td", { "class": f.drift_anomalous ? "bad" : "" }, fmt(f.drift)),
          el("td", {}, fmt(f.threshold)),
          el("td", {}, bad.length ? el("span", { "class": "badge bad" }, "⚠ " + bad.join(", ")) : "ok")));
        var h = hist_chart(f, "hist-" + mi + "-" + fi);
        if (h) figs.appendChild(h);
      });
      table.appendChild(tb);
      return [el("h3", {}, m.model + " v" + m.version + (m.anomalous ? " — anomalies" : "")),
              el("div", { "class": "wrap", tabindex: "0", role: "region", "aria-label": "Monitored features of " + m.model + " v" + m.version + " (scrolls sideways)" }, table), figs];
    });
  }

  /* ------------------------------------------------------------ Errors */
  function render_errors(tr) {
    var errs = (tr && tr.errors) || [];
    if (!errs.length) return el("p", { "class": "muted" }, "No refused request.");
    var tb = el("tbody");
    errs.forEach(function (e) {
      var msg = e.body;
      try { var j = JSON.parse(e.body); if (j && typeof j.error === "string") msg = j.error; } catch (x) { /* cut: shown raw */ }
      tb.appendChild(el("tr", { "class": "error-row", "data-code": e.code },
        el("td", {}, new Date(e.t_ms).toISOString().replace("T", " ").replace("Z", " UTC")),
        el("td", {}, String(e.code)), el("td", { "class": "msg" }, msg)));
    });
    return [el("p", { "class": "muted" }, tr.errors_total + " refused since the start; the last " + errs.length + " below."),
            el("div", { "class": "wrap", tabindex: "0", role: "region", "aria-label": "Recent errors (scrolls sideways)" }, el("table", { id: "errors-table" },
              el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Time"), el("th", { scope: "col" }, "Status"),
                 el("th", { scope: "col" }, "Message"))), tb))];
  }

  /* -------------------------------------------------------------- poll */
  var busy = false;
  function poll() {
    if (busy) return;
    busy = true;
    var list, statuses = {}, mons = [], traffic;
    getJSON("/v1/models").then(function (r) {
      list = r.body;
      var jobs = ((list && list.models) || []).map(function (m) {
        return getJSON(model_path(m.name)).then(function (s) {
          statuses[m.name] = s.body || {};
          var vs = (s.body && s.body.model_version_status) || [];
          return Promise.all(vs.filter(function (v) { return v.state === "AVAILABLE"; }).map(function (v) {
            return getJSON(model_path(m.name) + "/versions/" + encodeURIComponent(v.version) + "/monitoring")
              .then(function (x) { if (x.status === 200 && x.body) mons.push(x.body); });
          }));
        });
      });
      jobs.push(getJSON("/ui/api/traffic").then(function (x) { traffic = x.body; }));
      return Promise.all(jobs);
    }).then(function () {
      mons.sort(function (a, b) { return a.model < b.model ? -1 : a.model > b.model ? 1 : a.version - b.version; });
      replace("models-body", render_models(list, statuses));
      replace("traffic-body", render_traffic(traffic));
      replace("data-body", render_data(mons));
      replace("errors-body", render_errors(traffic));
      var n = (traffic && traffic.snapshots) ? traffic.snapshots.length : 0;
      document.getElementById("status").textContent = "Updated " + new Date().toLocaleTimeString() + " (" + n + " snapshots)";
      document.body.setAttribute("data-snapshots", String(n));
    }).catch(function (e) {
      document.getElementById("status").textContent = "Could not read the daemon: " + e;
    }).then(function () { busy = false; });
  }
  poll();
  setInterval(poll, POLL_MS);
})();
