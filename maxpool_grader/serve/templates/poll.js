(function () {
  "use strict";
  var region = document.getElementById("progress");
  if (!region || !window.fetch) {
    return;
  }
  var every = Number(region.getAttribute("data-every")) || 1000;
  var choice = document.getElementById("open-choice");
  var open = document.getElementById("open-when-ready");
  var ready = document.getElementById("ready");
  if (choice) {
    choice.hidden = false;
  }
  function say(text) {
    if (region.textContent !== text) {
      region.textContent = text;
    }
  }
  function check() {
    window.fetch(region.getAttribute("data-status"), {credentials: "same-origin", cache: "no-store"})
      .then(function (answer) {
        if (!answer.ok) {
          throw new Error("HTTP " + answer.status);
        }
        return answer.json();
      })
      .then(function (state) {
        say(state.text);
        if (!state.done) {
          window.setTimeout(check, every);
          return;
        }
        if (ready) {
          ready.href = state.url;
          ready.parentNode.hidden = false;
        }
        if (open && open.checked) {
          window.location.assign(state.url);
        }
      }, function () {
        say("The service did not answer. This page tries again in a moment; reloading it works too.");
        window.setTimeout(check, 5 * every);
      });
  }
  window.setTimeout(check, every);
}());
