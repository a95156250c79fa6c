/* checks.js — the accessibility checks test_daemon_ui runs in the console's
 * page (through the DevTools protocol) besides axe-core's: what axe leaves
 * "incomplete" because it cannot see it. Each returns a list of problems.
 *   a11yText():  the charts' SVG text against its panel, WCAG 1.4.3 (4.5:1;
 *                axe does not compute contrast inside role="img")
 *   a11yMarks(): the charts' lines, points and bars against their panel,
 *                WCAG 1.4.11 non-text contrast (3:1)
 *   a11yFocusables(): the elements Tab must reach, in document order */
(function () {
  function rgba(s) {
    var m = /rgba?\(([^)]+)\)/.exec(s || "");
    if (!m) return null;
    var p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  }
  function lum(c) {
    function ch(v) { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  }
  function ratio(a, b) {
    var x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }
  function over(fg, bg) { /* fg with alpha a, painted on opaque bg */
    return { r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a),
             b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1 };
  }
  function background(el) { /* the first opaque background up the tree */
    for (var e = el; e && e.nodeType === 1; e = e.parentNode) {
      var c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  }
  function where(el) {
    var svg = el.closest("svg");
    return el.tagName.toLowerCase() + "." + (el.getAttribute("class") || "") + " in " +
      (svg ? svg.getAttribute("aria-label") : "?");
  }
  window.a11yText = function () {
    var bad = [], n = 0;
    document.querySelectorAll("svg text").forEach(function (t) {
      var st = getComputedStyle(t), fg = rgba(st.fill), bg = background(t);
      if (!fg) return;
      n++;
      var r = ratio(over(fg, bg), bg);
      if (r < 4.5) bad.push(where(t) + " '" + t.textContent + "': " + r.toFixed(2) + ":1");
    });
    return { checked: n, problems: bad };
  };
  window.a11yMarks = function () {
    var bad = [], n = 0;
    document.querySelectorAll("svg polyline.series, svg circle.point, svg rect").forEach(function (m) {
      var st = getComputedStyle(m), bg = background(m);
      var paint = m.tagName.toLowerCase() === "polyline" ? st.stroke : st.fill;
      var fg = rgba(paint);
      if (!fg) return;
      fg.a *= Number(m.tagName.toLowerCase() === "polyline" ? st.strokeOpacity : st.fillOpacity);
      n++;
      var r = ratio(over(fg, bg), bg);
      if (r < 3) bad.push(where(m) + ": " + r.toFixed(2) + ":1");
    });
    return { checked: n, problems: bad };
  };
  window.a11yFocusables = function () {
    var sel = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";
    return Array.prototype.filter.call(document.querySelectorAll(sel), function (e) {
      return e.getClientRects().length > 0 && !e.disabled;
    }).map(function (e) { return e.outerHTML.slice(0, 80); });
  };
  window.a11yActive = function () {
    var e = document.activeElement, st = getComputedStyle(e);
    return { html: e === document.body ? "body" : e.outerHTML.slice(0, 80),
             outline: st.outlineStyle !== "none" && parseFloat(st.outlineWidth) > 0 ?
               st.outlineStyle + " " + st.outlineWidth + " " + st.outlineColor : "",
             outlineContrast: (function () {
               var c = rgba(st.outlineColor);
               return c ? ratio(c, background(e.parentNode || e)) : 0;
             })() };
  };
})();
