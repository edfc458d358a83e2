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
  var asOf = document.getElementById("as-of");
  var pause = document.getElementById("pause");
  var paused = false;
  var pending = null;  // the next check's timer
  var busy = false;  // a check is waiting for the service
  if (choice) {
    choice.hidden = false;
  }
  if (pause) {
    pause.hidden = false;
    pause.addEventListener("click", function () {
      paused = !paused;
      pause.setAttribute("aria-pressed", paused ? "true" : "false");  // a toggle: its name stays
      if (paused && pending !== null) {
        window.clearTimeout(pending);
        pending = null;
      } else if (!paused && pending === null && !busy) {
        check();
      }
    });
  }
  function later(delay) {
    if (!paused) {
      pending = window.setTimeout(check, delay);
    }
  }
  function say(text) {
    if (region.textContent !== text) {
      region.textContent = text;
    }
  }
  function check() {
    pending = null;
    busy = true;
    window.fetch(region.getAttribute("data-status"), {credentials: "same-origin", cache: "no-store"})
      .then(function (answer) {
        if (!answer.ok) {
          throw new Error("HTTP " + answer.status);
        }
        return answer.json();
      })
      .then(function (state) {
        busy = false;
        say(state.text);
        if (asOf && state.as_of) {
          asOf.textContent = state.as_of;  // outside the live region: not announced
        }
        if (!state.done) {
          later(every);
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
        busy = false;
        say("The service did not answer. This page tries again in a moment; reloading it works too.");
        later(5 * every);
      });
  }
  later(every);
}());
