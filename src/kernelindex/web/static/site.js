// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";

  // "/" or Ctrl/⌘-K focuses the site search box from any page.
  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("site-search");
    if (!box) return;
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" ||
      target.tagName === "SELECT" || target.isContentEditable);
    var slash = event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey;
    var cmdK = (event.key === "k" || event.key === "K") && (event.ctrlKey || event.metaKey);
    if (slash || cmdK) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });

  // Copy buttons: <button class="copy-btn" data-copy="text" hidden>Copy</button>
  function copyText(text) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text);
    }
    return Promise.reject(new Error("clipboard unavailable"));
  }
  document.querySelectorAll(".copy-btn[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var label = button.textContent;
      copyText(button.getAttribute("data-copy")).then(function () {
        button.textContent = "Copied";
      }, function () {
        button.textContent = "Select and copy";
      }).then(function () {
        setTimeout(function () { button.textContent = label; }, 1500);
      });
    });
  });

  // Compare forms: empty run fields are not sent, so the URL never reads "&run=&run=".
  document.querySelectorAll("form.compare-form").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("input[name=run]").forEach(function (input) {
        if (!input.value.trim()) input.disabled = true;
      });
    });
  });

  // Sortable tables: <table data-sortable> with numeric cells carrying data-sort values.
  document.querySelectorAll("table[data-sortable]").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-btn";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        rows.sort(function (a, b) {
          var x = a.cells[index], y = b.cells[index];
          var xv = x.getAttribute("data-sort") || x.textContent.trim();
          var yv = y.getAttribute("data-sort") || y.textContent.trim();
          var xn = parseFloat(xv), yn = parseFloat(yv);
          var cmp = (!isNaN(xn) && !isNaN(yn)) ? xn - yn : xv.localeCompare(yv);
          return ascending ? cmp : -cmp;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  // A link to a section inside a collapsed <details> (the GPU page's #ceilings) opens it.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    var details = target && target.closest("details");
    if (details && !details.open) {
      details.open = true;
      target.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
