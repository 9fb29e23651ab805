// Loaded before respond.js as a classic script (not a module, so that it runs when a module
// cannot): when the form's code fails to load, or is refused by its integrity pin, every form
// not yet started says so in plain words, instead of "Loading the survey…" forever.
// The words come from the page ([data-deniable-loading] data-failed), in the page's language.
(() => {
  const fail = () => {
    for (const root of document.querySelectorAll("[data-deniable-survey]")) {
      if (root.dataset.state) continue; // started: respond.js reports its own failures
      const status = root.querySelector("[data-deniable-loading]");
      const message =
        status?.dataset.failed ||
        "This form could not be loaded safely. Nothing was sent. Please try again later.";
      const shown = document.createElement("p");
      shown.className = "deniable-status deniable-error";
      shown.setAttribute("role", "alert");
      shown.textContent = message;
      status?.remove();
      root.append(shown);
      root.dataset.state = "refused";
    }
  };
  // Why the script elements only: a failed modulepreload is fetched again (pinned by the import
  // map); a module script whose graph fails, by a network error or a hash mismatch, fires "error".
  addEventListener(
    "error",
    (event) => {
      if (
        event.target instanceof HTMLScriptElement &&
        event.target.src.includes("/static/deniable/")
      )
        fail();
    },
    true,
  );
  // A module that never answers: give up after a while (respond.js marks a started form at once).
  addEventListener("load", () => setTimeout(fail, 30000));
})();
