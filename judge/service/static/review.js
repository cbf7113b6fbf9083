// claim-judge review page: keyboard shortcuts and time spent. No inline script (CSP).
// 1-4 choose a label; letters choose a subtype (shown on each button); Enter saves;
// j / ArrowRight next, k / ArrowLeft previous; "/" focuses the note; Esc leaves it;
// Ctrl+Enter saves from inside the note; "?" shows the shortcuts; "l" opens the list.
(function () {
  "use strict";
  var help = document.getElementById("shortcuts");
  var helpButton = document.getElementById("help-button");
  function toggleHelp() {
    if (!help) { return; }
    if (help.open) { help.close(); } else { help.showModal(); }
  }
  if (helpButton) { helpButton.addEventListener("click", toggleHelp); }
  var form = document.getElementById("review-form");
  if (!form) { return; }
  var started = Date.now();
  var byKey = {};
  Array.prototype.forEach.call(form.querySelectorAll("input[data-key]"), function (input) {
    byKey[input.getAttribute("data-key")] = input;
  });
  var note = form.querySelector("textarea");
  var status = document.getElementById("form-status");

  function say(text) { if (status) { status.textContent = text; } }

  function chosen(name) { return form.querySelector("input[name=" + name + "]:checked"); }

  function syncSubtypes() {
    var label = chosen("label");
    var supported = !!label && label.value === "supported";
    Array.prototype.forEach.call(form.querySelectorAll("input[name=subtype]"), function (i) {
      i.disabled = supported;
      if (supported) { i.checked = false; }
    });
  }

  function save() {
    var label = chosen("label");
    if (!label) { say("Choose a label first (keys 1-4)."); return; }
    if (label.value !== "supported" && !chosen("subtype")) {
      say("Choose a subtype: a claim that is not supported needs one.");
      return;
    }
    var reason = form.querySelector("textarea[name=reason]");
    if (reason && !reason.value.trim()) { say("Write the reason for the decision."); reason.focus(); return; }
    var spent = form.querySelector("input[name=time_spent_ms]");
    if (spent) { spent.value = String(Date.now() - started); }
    say("");
    form.submit();
  }

  function go(id) {
    var link = document.getElementById(id);
    if (link) { window.location.assign(link.href); }
  }

  form.addEventListener("change", syncSubtypes);
  form.addEventListener("submit", function (event) { event.preventDefault(); save(); });
  syncSubtypes();

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey || event.isComposing) { return; }
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && (target.type === "text" || target.type === "password")));
    if (typing) {
      if (event.key === "Enter" && event.ctrlKey) { event.preventDefault(); save(); }
      else if (event.key === "Escape") { target.blur(); }
      return;
    }
    if (event.ctrlKey) { return; }
    if (event.key === "?") { event.preventDefault(); toggleHelp(); return; }
    if (help && help.open) { return; }
    var input = byKey[event.key];
    if (input) {
      event.preventDefault();
      if (!input.disabled) { input.checked = true; syncSubtypes(); say(""); }
      return;
    }
    if (event.key === "Enter") { event.preventDefault(); save(); }
    else if (event.key === "j" || event.key === "ArrowRight") { go("next"); }
    else if (event.key === "k" || event.key === "ArrowLeft") { go("prev"); }
    else if (event.key === "/" && note) { event.preventDefault(); note.focus(); }
    else if (event.key === "l") { go("to-list"); }
  });
}());
