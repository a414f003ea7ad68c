/* acclint report: filters, search, keyboard navigation and shareable state in the URL fragment.
   Without this script the page shows everything; with it the controls appear. No network. */
(function () {
  "use strict";
  var doc = document;
  var controls = doc.getElementById("controls");
  var cards = Array.prototype.slice.call(doc.querySelectorAll("article.finding"));
  var ruleGroups = Array.prototype.slice.call(doc.querySelectorAll("#findings .rule-group"));
  var folds = Array.prototype.slice.call(doc.querySelectorAll("#findings details.more"));
  var items = Array.prototype.slice.call(doc.querySelectorAll("#findings section.item"));
  var search = doc.getElementById("search");
  var fileSelect = doc.getElementById("file-filter");
  var shown = doc.getElementById("shown");
  var noneShown = doc.getElementById("none-shown");
  var dialog = doc.getElementById("rule-dialog");
  var catBoxes = Array.prototype.slice.call(controls.querySelectorAll("input[name=cat]"));
  var sevBoxes = Array.prototype.slice.call(controls.querySelectorAll("input[name=sev]"));

  // Per rule group and per checklist section: its element, its count badge and its full count.
  var groups = ruleGroups.map(function (el) {
    var badge = el.querySelector("h4 .count");
    return { el: el, badge: badge, total: badge ? badge.textContent : "", shown: -1,
             section: items.indexOf(el.closest("section.item")) };
  });
  var groupOf = new Map(groups.map(function (g, i) { return [g.el, i]; }));
  // A rule's folded repeats: the <details>, and the count its summary shows while filtered.
  var foldOf = new Map(folds.map(function (el, i) { return [el, i]; }));
  var foldCounts = folds.map(function (el) { return el.querySelector(".more-n"); });
  // One record per card; the lowercased text is read on the first search only.
  var records = cards.map(function (el) {
    return { el: el, cat: el.getAttribute("data-cat"), sev: el.getAttribute("data-sev"),
             file: el.getAttribute("data-file"), group: groupOf.get(el.closest(".rule-group")),
             fold: foldOf.has(el.parentNode) ? foldOf.get(el.parentNode) : -1, text: null };
  });
  var current = -1;

  function checked(boxes) {
    return boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
  }

  function state() {
    return { cat: checked(catBoxes), sev: checked(sevBoxes), file: fileSelect.value, q: search.value.trim(),
             at: current >= 0 ? records[current].el.id : "" };
  }

  function writeHash() {
    var s = state(), parts = [];
    if (s.cat.length !== catBoxes.length) parts.push("cat=" + s.cat.map(encodeURIComponent).join(","));
    if (s.sev.length !== sevBoxes.length) parts.push("sev=" + s.sev.map(encodeURIComponent).join(","));
    if (s.file) parts.push("file=" + encodeURIComponent(s.file));
    if (s.q) parts.push("q=" + encodeURIComponent(s.q));
    if (s.at) parts.push("at=" + encodeURIComponent(s.at));
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (hash !== location.hash && !(hash === "" && location.hash === "#")) {
      history.replaceState(null, "", hash || location.pathname + location.search);
    }
  }

  function readHash() {
    var hash = location.hash.slice(1);
    if (hash.indexOf("=") < 0) return false;  // a plain anchor (#rules), not a saved state
    var params = {};
    hash.split("&").forEach(function (pair) {
      var i = pair.indexOf("=");
      if (i > 0) params[pair.slice(0, i)] = decodeURIComponent(pair.slice(i + 1));
    });
    function pick(boxes, value) {
      var wanted = value === undefined ? null : value.split(",").map(decodeURIComponent);
      boxes.forEach(function (b) { b.checked = wanted === null || wanted.indexOf(b.value) >= 0; });
    }
    pick(catBoxes, params.cat);
    pick(sevBoxes, params.sev);
    fileSelect.value = params.file || "";
    if (fileSelect.value !== (params.file || "")) fileSelect.value = "";
    search.value = params.q || "";
    apply(false);
    if (params.at) {
      var index = indexOf(params.at);
      if (index >= 0 && !records[index].el.hidden) select(index, false);
    }
    return true;
  }

  function indexOf(id) {
    for (var i = 0; i < records.length; i++) if (records[i].el.id === id) return i;
    return -1;
  }

  function apply(save) {
    var s = state();
    var cats = {}, sevs = {};
    s.cat.forEach(function (c) { cats[c] = true; });
    s.sev.forEach(function (c) { sevs[c] = true; });
    var q = s.q.toLowerCase();
    var visible = 0, perGroup = new Array(groups.length).fill(0), perSection = new Array(items.length).fill(0);
    var perFold = new Array(folds.length).fill(0);
    for (var i = 0; i < records.length; i++) {
      var r = records[i];
      var show = cats[r.cat] === true && sevs[r.sev] === true && (!s.file || r.file === s.file);
      if (show && q) {
        if (r.text === null) r.text = r.el.textContent.toLowerCase();
        show = r.text.indexOf(q) >= 0;
      }
      // Touch the DOM only where something changes: style and layout are the cost, not this loop.
      if (r.el.hidden === show) r.el.hidden = !show;
      if (show) { visible++; perGroup[r.group]++; if (r.fold >= 0) perFold[r.fold]++; }
    }
    var filtered = visible !== records.length;
    groups.forEach(function (g, i) {
      var n = perGroup[i];
      perSection[g.section] += n;
      if (g.shown === n) return;
      g.shown = n;
      if (g.el.hidden !== (n === 0)) g.el.hidden = n === 0;
      if (g.badge) g.badge.textContent = String(n) === g.total || n === 0 ? g.total : n + " of " + g.total;
    });
    folds.forEach(function (el, i) {
      var n = perFold[i];
      if (el.hidden !== (n === 0)) el.hidden = n === 0;
      foldCounts[i].textContent = filtered && n ? "(" + n + " shown)" : "";
      // A search or a file asks for those findings: show them rather than a closed fold, and fold
      // them again once the filter is gone (thousands of open cards would make every filter slow).
      if ((s.q || s.file) && n && !el.open) { el.open = true; el.setAttribute("data-opened-by", "filter"); }
      else if (!(s.q || s.file) && el.getAttribute("data-opened-by") === "filter") {
        el.open = false; el.removeAttribute("data-opened-by");
      }
    });
    items.forEach(function (section, i) {
      var any = section.classList.contains("empty") ? !filtered : perSection[i] > 0;
      if (section.hidden === any) section.hidden = !any;
    });
    var noun = records.length === 1 ? " finding" : " findings";
    shown.textContent = filtered ? "Showing " + visible + " of " + records.length + noun
      : records.length === 1 ? "Showing the only finding" : "Showing all " + records.length + noun;
    noneShown.hidden = visible !== 0 || records.length === 0;
    if (current >= 0 && records[current].el.hidden) select(-1, false);
    if (save !== false) writeHash();
  }

  function visibleIndexes() {
    var out = [];
    for (var i = 0; i < records.length; i++) if (!records[i].el.hidden) out.push(i);
    return out;
  }

  function select(index, save) {
    if (current >= 0) records[current].el.classList.remove("current");
    current = index;
    if (index >= 0) {
      var el = records[index].el;
      var fold = el.closest("details");
      if (fold && !fold.open) fold.open = true;
      if (fold) fold.removeAttribute("data-opened-by");  // the reader is in it now: it stays open
      el.classList.add("current");
      el.setAttribute("tabindex", "-1");
      el.focus({ preventScroll: true });
      el.scrollIntoView({ block: "nearest" });
    }
    if (save !== false) writeHash();
  }

  function step(delta) {
    var list = visibleIndexes();
    if (!list.length) return;
    var pos = list.indexOf(current);
    var next = pos < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, pos + delta));
    select(list[next]);
  }

  function openRule(code) {
    var page = doc.getElementById("rule-" + code);
    if (!page || !dialog || typeof dialog.showModal !== "function") return false;
    var body = dialog.querySelector(".body");
    body.innerHTML = "";
    body.appendChild(page.cloneNode(true)).removeAttribute("id");
    dialog.showModal();
    return true;
  }

  controls.hidden = false;
  controls.addEventListener("change", function () { apply(); });
  var typing = null;
  search.addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(apply, 120);
  });
  doc.getElementById("clear").addEventListener("click", function () {
    catBoxes.concat(sevBoxes).forEach(function (b) { b.checked = true; });
    fileSelect.value = "";
    search.value = "";
    apply();
  });

  doc.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href^='#']");
    if (!link) return;
    var id = link.getAttribute("href").slice(1);
    if (id.indexOf("rule-") === 0 && openRule(id.slice(5))) {
      event.preventDefault();
      return;
    }
    var target = doc.getElementById(id);
    if (!target) return;
    // Jump without replacing the saved filters in the address bar.
    event.preventDefault();
    if (target.hidden || target.closest("[hidden]")) {
      var item = target.getAttribute("data-item");
      if (item) catBoxes.forEach(function (b) { if (b.value === item) b.checked = true; });
      apply();
    }
    target.scrollIntoView({ block: "start" });
  });

  doc.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    var typingInField = tag === "input" || tag === "select" || tag === "textarea";
    if (event.key === "Escape") {
      if (typingInField) { event.target.blur(); }
      return;
    }
    if (typingInField || (dialog && dialog.open)) return;
    if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); step(1); }
    else if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); step(-1); }
    else if (event.key === "/") { event.preventDefault(); search.focus(); search.select(); }
    else if (event.key === "r" && current >= 0) { openRule(records[current].el.getAttribute("data-rule")); }
  });

  // Read the cards' text for search while the page is idle, so the first search does not wait for it.
  var idle = window.requestIdleCallback || function (fn) { return setTimeout(function () { fn({ timeRemaining: function () { return 8; } }); }, 50); };
  var nextText = 0;
  function readTexts(deadline) {
    while (nextText < records.length && deadline.timeRemaining() > 1) {
      var r = records[nextText++];
      if (r.text === null) r.text = r.el.textContent.toLowerCase();
    }
    if (nextText < records.length) idle(readTexts);
  }
  idle(readTexts);

  // Print every finding: folds open for the printout and close again after it.
  var openedForPrint = [];
  window.addEventListener("beforeprint", function () {
    openedForPrint = folds.filter(function (el) { return !el.open; });
    openedForPrint.forEach(function (el) { el.open = true; });
  });
  window.addEventListener("afterprint", function () {
    openedForPrint.forEach(function (el) { el.open = false; });
    openedForPrint = [];
  });

  window.addEventListener("hashchange", readHash);
  if (!readHash()) apply(false);
})();
