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

  // A changed label (against this reviewer's earlier one) keeps the original and needs the
  // reason: the note is marked required as soon as the choice differs.
  var previous = form.getAttribute("data-previous-label");
  var need = document.getElementById("note-need");
  var needText = need ? need.textContent : "";
  function labelChanged() {
    if (!previous) { return false; }
    var label = chosen("label"), subtype = chosen("subtype");
    return !!label && (label.value !== previous ||
      (subtype ? subtype.value : "") !== (form.getAttribute("data-previous-subtype") || ""));
  }
  function syncNote() {
    if (!note || !need || !previous) { return; }
    var changed = labelChanged();
    note.required = changed;
    need.textContent = changed ? "required: you changed your earlier label, say why"
                               : needText;
    need.className = changed ? "small required" : "muted small";
  }

  function syncSubtypes() {
    var label = chosen("label");
    var supported = !!label && label.value === "supported";
    Array.prototype.forEach.call(form.querySelectorAll("input[name=subtype]"), function (i) {
      i.disabled = supported;
      if (supported) { i.checked = false; }
    });
    syncNote();
  }

  function save() {
    var label = chosen("label");
    if (!label) { say("Choose a label first (keys 1-4)."); return; }
    if (label.value !== "supported" && !chosen("subtype")) {
      say("Choose a subtype: a claim that is not supported needs one.");
      return;
    }
    if (labelChanged() && note && !note.value.trim()) {
      say("You changed your earlier label: write why in the note.");
      note.focus();
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
