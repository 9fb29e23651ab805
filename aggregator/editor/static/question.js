// The question form's type-dependent fields follow its Type at once: the fields of other
// types are hidden, and so are the mechanisms that do not fit. Without this script the page
// still works: the fields follow the type once the question is saved (the hint says so).

const type = document.getElementById("type");
if (type) {
  const apply = () => {
    for (const part of document.querySelectorAll("#question-form [data-types]")) {
      const fits = part.dataset.types.split(" ").includes(type.value);
      part.hidden = !fits;
      // A mechanism of the old type is not one of the new: back to "Chosen for me".
      if (!fits && part.selected) part.closest("select").value = "";
    }
  };
  type.addEventListener("change", apply);
  const hint = document.getElementById("type-hint");
  if (hint) hint.textContent = "The fields below follow the type you choose.";
}
