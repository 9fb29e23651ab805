// The respond page's words (respond.js and the aggregator's pages read this one catalogue).
// The object after "MESSAGES =" is strict JSON: the aggregator parses it (respond/words.py).
// {name} is filled in; the survey's own text (title, questions, options) stays the operator's.
export const MESSAGES = {
  en: {
    language: "English",
    page_title: "{title} — answer privately",
    intro:
      "Your answers are randomized on this device before anything is sent, so no single report reveals what you answered. Before anything leaves, you will see exactly what will be sent.",
    noscript:
      "JavaScript is required to answer this survey: your answers are randomized in your browser, and without it nothing can be sent. Nothing has been sent.",
    loading: "Loading the survey…",
    load_failed:
      "This form could not be loaded safely: part of its code did not arrive, or was not the code this page expects. Nothing was sent. Please try again later.",
    closed: "This survey is closed and no longer accepts answers. Nothing was sent.",
    not_found_heading: "Survey not found",
    not_found: "There is no survey at this address. Please check the link you were given.",
    legacy_heading: "This survey cannot be answered in a browser",
    legacy:
      "This survey was made with an older version of the software and can only be answered with the Deniable app. Please ask the survey's organisers for a new link.",
    checking: "Checking that this survey comes from its organisers…",
    cost_total:
      "Answering this survey costs at most ε = {epsilon} of this device's privacy budget. ε measures how much your answers could reveal about you: the smaller, the more private.",
    epsilon_link: "What does ε mean?",
    relay_question:
      "What is sent is also encrypted on this device, so that only the survey's server can read it, and goes through a separate relay service, {relay}. The relay passes on the values for each question only in shuffled batches of at least {min_batch}, without saying who sent them, so the survey's organisers cannot tell which values are yours or link them to each other.",
    relay_unbatched:
      "What is sent is also encrypted on this device, so that only the survey's server can read it, and goes through a separate relay service, {relay}, so the survey's server does not see your device's address. The relay passes each one on by itself, so it is not mixed with other people's.",
    relay_submission:
      "What is sent is also encrypted on this device, as one bundle that only the survey's server can read, and goes through a separate relay service, {relay}. The relay passes on bundles only in shuffled batches of at least {min_batch}, without saying who sent them, so the survey's organisers cannot tell which bundle is yours.",
    thousands_separator: ",",
    budget:
      "This device has ε = {period_left} of {period_cap} left for the last {days} days, and ε = {lifetime_left} of {lifetime_cap} in total. A single survey may cost at most ε = {survey_cap}.",
    budget_renews: "What was spent in this period comes back from {date}.",
    budget_fresh: "Nothing has been spent on this device in the last {days} days.",
    question_cost: "Privacy cost of this question: ε = {epsilon}",
    number_label: "A number from {lo} to {hi}",
    yes: "Yes",
    no: "No",
    token_label: "Enrolment token (from the survey's organisers)",
    randomize: "Randomize my answers",
    fix_errors: "Please check the answers marked below.",
    required: "Please answer this question.",
    required_token: "Please enter your enrolment token.",
    out_of_range: "Please enter a number from {lo} to {hi}.",
    review_heading: "What leaves your device",
    review_explain:
      "Your answers were randomized on this device. Only the values below will be sent, not your answers.",
    review_why:
      "These values may differ from what you answered. That is on purpose: each answer is sometimes replaced at random, so no one who sees these values, not the organisers and not the survey's server, can tell what you answered. Only totals over many people are meaningful, and the randomness is corrected for in those.",
    review_cost: "Sending these costs ε = {epsilon} of this device's privacy budget.",
    send: "Send these noisy values",
    change: "Change my answers",
    sending: "Sending…",
    cancelled: "Nothing was sent. You can change your answers.",
    thanks_heading: "Thank you",
    sent: "Your noisy values were sent and received: {count} values, one per question, and never your answers. They cost ε = {epsilon} of this device's privacy budget.",
    results_link: "See the survey's results",
    queued:
      "Not sent yet: you are offline, or the survey's server is busy. Your noisy values are saved on this device and will be sent automatically; you can close this page.",
    delivered_now: "Your saved noisy values have now been delivered. Thank you.",
    delivered_revisit:
      "Your earlier answers to this survey were delivered now. Thank you: there is nothing more to do.",
    already_answered:
      "You have already answered this survey on this device. Thank you: there is nothing more to do.",
    already_waiting:
      "You have already answered this survey on this device. Your noisy values are saved here and will be sent automatically.",
    refused_signature:
      "This survey cannot be answered here: it could not be verified as coming from its organisers. Nothing was sent.",
    refused_invalid:
      "This survey cannot be answered here: its questions are not in a form this page can check. Nothing was sent.",
    refused_policy:
      "This survey would reveal more about you than this device allows for one question or one survey, so it cannot be answered here. Nothing was sent.",
    refused_budget:
      "Answering this survey would go over this device's privacy budget for {when}. Nothing was sent.",
    budget_period: "the last {days} days",
    budget_lifetime: "its lifetime",
    unreachable:
      "The survey's server cannot be reached right now (perhaps you are offline). Nothing was sent. Please try again later.",
    not_available:
      "This survey is not available right now. Nothing was sent. Please try again later.",
    cors: "This form cannot reach the survey from this website. Nothing was sent. Please tell the website's owner.",
    cors_console:
      "Deniable: the survey's server {aggregator} does not allow requests from this page's origin {origin} (CORS). Its operator must add {origin} to DENIABLE_CORS_ORIGINS; the aggregator reads its settings when it starts, so restart it afterwards.",
    server_refused:
      "The survey's server did not accept these answers, so nothing was recorded. Please try again later.",
    not_sent: "Not sent: the survey's server could not be reached. Please try again.",
    token_refused:
      "The survey's server did not accept the enrolment token. Your noisy values are saved on this device: enter a valid token to send them.",
    token_send: "Send my saved noisy values",
    value_high: "high end of the range",
    value_low: "low end of the range",
    value_about: "about “{option}” only: {answer}",
    value_marked: "marked: {options}",
    value_none: "none",
    value_one_of: "one of: {options}",
    value_coded: "a coded value ({value})",
    how_numeric:
      "A number is sent only as “high” or “low”, drawn at random so that the average over many people comes out right.",
    how_sampled:
      "For this question only one option, picked at random, is reported, as a noisy yes or no.",
    how_noise:
      "This value was drawn at random around your answer: on its own it says little about it.",
    epsilon_title: "What ε (privacy loss) means",
    epsilon_1:
      "Before your answers leave your device, they are randomized: each answer is sometimes replaced by a random one. Whoever reads what was sent cannot know what you answered, but totals over many people can still be estimated.",
    epsilon_2:
      "ε (epsilon) says how much randomness there is. With ε = 1, any answer you give is at most e¹ ≈ 2.7 times as likely as any other to produce what was sent; with ε = 0.5, at most e^0.5 ≈ 1.65 times. The smaller ε, the less your answers can reveal about you.",
    epsilon_3:
      "ε adds up over questions and surveys. Your device keeps count and refuses a survey that would go over its caps: per question, per survey, per period, and over its lifetime. The count stays on your device.",
  },
  de: {
    language: "Deutsch",
    page_title: "{title} — vertraulich antworten",
    intro:
      "Ihre Antworten werden auf diesem Gerät zufällig verändert, bevor etwas gesendet wird. So verrät keine einzelne Meldung, was Sie geantwortet haben. Bevor etwas Ihr Gerät verlässt, sehen Sie genau, was gesendet wird.",
    noscript:
      "Für diese Umfrage ist JavaScript nötig: Ihre Antworten werden in Ihrem Browser zufällig verändert, ohne JavaScript kann nichts gesendet werden. Es wurde nichts gesendet.",
    loading: "Die Umfrage wird geladen…",
    load_failed:
      "Dieses Formular konnte nicht sicher geladen werden: Ein Teil seines Programmcodes ist nicht angekommen oder nicht der Code, den diese Seite erwartet. Es wurde nichts gesendet. Bitte versuchen Sie es später noch einmal.",
    closed:
      "Diese Umfrage ist beendet und nimmt keine Antworten mehr an. Es wurde nichts gesendet.",
    not_found_heading: "Umfrage nicht gefunden",
    not_found:
      "Unter dieser Adresse gibt es keine Umfrage. Bitte prüfen Sie den Link, den Sie erhalten haben.",
    legacy_heading: "Diese Umfrage kann nicht im Browser beantwortet werden",
    legacy:
      "Diese Umfrage wurde mit einer älteren Version der Software erstellt und kann nur mit der Deniable-App beantwortet werden. Bitten Sie die Veranstalter der Umfrage um einen neuen Link.",
    checking: "Es wird geprüft, ob diese Umfrage von ihren Veranstaltern stammt…",
    cost_total:
      "Diese Umfrage kostet höchstens ε = {epsilon} des Privatsphäre-Budgets dieses Geräts. ε misst, wie viel Ihre Antworten über Sie verraten könnten: je kleiner, desto privater.",
    epsilon_link: "Was bedeutet ε?",
    relay_question:
      "Was gesendet wird, wird außerdem auf diesem Gerät verschlüsselt, sodass nur der Server der Umfrage es lesen kann, und läuft über einen getrennten Weiterleitungsdienst, {relay}. Dieser gibt die Werte jeder Frage nur gemischt und in Gruppen von mindestens {min_batch} weiter, ohne zu verraten, wer sie gesendet hat. So können die Veranstalter der Umfrage nicht erkennen, welche Werte von Ihnen stammen, und sie auch nicht einander zuordnen.",
    relay_unbatched:
      "Was gesendet wird, wird außerdem auf diesem Gerät verschlüsselt, sodass nur der Server der Umfrage es lesen kann, und läuft über einen getrennten Weiterleitungsdienst, {relay}. So sieht der Server der Umfrage die Adresse Ihres Geräts nicht. Der Dienst gibt jede Sendung einzeln weiter, sie wird also nicht mit denen anderer gemischt.",
    relay_submission:
      "Was gesendet wird, wird außerdem auf diesem Gerät als ein Paket verschlüsselt, das nur der Server der Umfrage lesen kann, und läuft über einen getrennten Weiterleitungsdienst, {relay}. Dieser gibt die Pakete nur gemischt und in Gruppen von mindestens {min_batch} weiter, ohne zu verraten, wer sie gesendet hat. So können die Veranstalter der Umfrage nicht erkennen, welches Paket von Ihnen stammt.",
    thousands_separator: ".",
    budget:
      "Dieses Gerät hat noch ε = {period_left} von {period_cap} für die letzten {days} Tage und ε = {lifetime_left} von {lifetime_cap} insgesamt. Eine einzelne Umfrage darf höchstens ε = {survey_cap} kosten.",
    budget_renews:
      "Was in diesem Zeitraum verbraucht wurde, steht ab dem {date} wieder zur Verfügung.",
    budget_fresh: "In den letzten {days} Tagen wurde auf diesem Gerät nichts verbraucht.",
    question_cost: "Privatsphäre-Kosten dieser Frage: ε = {epsilon}",
    number_label: "Eine Zahl von {lo} bis {hi}",
    yes: "Ja",
    no: "Nein",
    token_label: "Teilnahme-Code (von den Veranstaltern der Umfrage)",
    randomize: "Meine Antworten zufällig verändern",
    fix_errors: "Bitte prüfen Sie die markierten Antworten.",
    required: "Bitte beantworten Sie diese Frage.",
    required_token: "Bitte geben Sie Ihren Teilnahme-Code ein.",
    out_of_range: "Bitte geben Sie eine Zahl von {lo} bis {hi} ein.",
    review_heading: "Was Ihr Gerät verlässt",
    review_explain:
      "Ihre Antworten wurden auf diesem Gerät zufällig verändert. Gesendet werden nur die Werte unten, nicht Ihre Antworten.",
    review_why:
      "Diese Werte können von Ihren Antworten abweichen. Das ist Absicht: Jede Antwort wird manchmal zufällig ersetzt, sodass niemand, der diese Werte sieht, weder die Veranstalter noch der Server der Umfrage, erkennen kann, was Sie geantwortet haben. Aussagekräftig sind nur Summen über viele Menschen, in denen der Zufall herausgerechnet wird.",
    review_cost: "Das Senden kostet ε = {epsilon} des Privatsphäre-Budgets dieses Geräts.",
    send: "Diese verrauschten Werte senden",
    change: "Meine Antworten ändern",
    sending: "Wird gesendet…",
    cancelled: "Es wurde nichts gesendet. Sie können Ihre Antworten ändern.",
    thanks_heading: "Vielen Dank",
    sent: "Ihre verrauschten Werte wurden gesendet und empfangen: {count} Werte, einer pro Frage, und niemals Ihre Antworten. Sie kosteten ε = {epsilon} des Privatsphäre-Budgets dieses Geräts.",
    results_link: "Ergebnisse der Umfrage ansehen",
    queued:
      "Noch nicht gesendet: Sie sind offline, oder der Server der Umfrage ist ausgelastet. Ihre verrauschten Werte sind auf diesem Gerät gespeichert und werden automatisch gesendet; Sie können diese Seite schließen.",
    delivered_now: "Ihre gespeicherten verrauschten Werte wurden jetzt zugestellt. Vielen Dank.",
    delivered_revisit:
      "Ihre früheren Antworten auf diese Umfrage wurden jetzt zugestellt. Vielen Dank: Sie müssen nichts weiter tun.",
    already_answered:
      "Sie haben diese Umfrage auf diesem Gerät bereits beantwortet. Vielen Dank: Sie müssen nichts weiter tun.",
    already_waiting:
      "Sie haben diese Umfrage auf diesem Gerät bereits beantwortet. Ihre verrauschten Werte sind hier gespeichert und werden automatisch gesendet.",
    refused_signature:
      "Diese Umfrage kann hier nicht beantwortet werden: Es ließ sich nicht bestätigen, dass sie von ihren Veranstaltern stammt. Es wurde nichts gesendet.",
    refused_invalid:
      "Diese Umfrage kann hier nicht beantwortet werden: Ihre Fragen liegen nicht in einer Form vor, die diese Seite prüfen kann. Es wurde nichts gesendet.",
    refused_policy:
      "Diese Umfrage würde mehr über Sie verraten, als dieses Gerät für eine Frage oder eine Umfrage zulässt, und kann deshalb hier nicht beantwortet werden. Es wurde nichts gesendet.",
    refused_budget:
      "Diese Umfrage würde das Privatsphäre-Budget dieses Geräts für {when} überschreiten. Es wurde nichts gesendet.",
    budget_period: "die letzten {days} Tage",
    budget_lifetime: "seine gesamte Nutzungsdauer",
    unreachable:
      "Der Server der Umfrage ist gerade nicht erreichbar (vielleicht sind Sie offline). Es wurde nichts gesendet. Bitte versuchen Sie es später noch einmal.",
    not_available:
      "Diese Umfrage ist gerade nicht verfügbar. Es wurde nichts gesendet. Bitte versuchen Sie es später noch einmal.",
    cors: "Dieses Formular kann die Umfrage von dieser Website aus nicht erreichen. Es wurde nichts gesendet. Bitte informieren Sie die Betreiber der Website.",
    cors_console:
      "Deniable: Der Server der Umfrage {aggregator} erlaubt keine Anfragen vom Ursprung dieser Seite {origin} (CORS). Sein Betreiber muss {origin} in DENIABLE_CORS_ORIGINS eintragen; der Aggregator liest seine Einstellungen beim Start, danach also neu starten.",
    server_refused:
      "Der Server der Umfrage hat diese Antworten nicht angenommen, es wurde also nichts gespeichert. Bitte versuchen Sie es später noch einmal.",
    not_sent:
      "Nicht gesendet: Der Server der Umfrage war nicht erreichbar. Bitte versuchen Sie es noch einmal.",
    token_refused:
      "Der Server der Umfrage hat den Teilnahme-Code nicht angenommen. Ihre verrauschten Werte sind auf diesem Gerät gespeichert: Geben Sie einen gültigen Code ein, um sie zu senden.",
    token_send: "Meine gespeicherten verrauschten Werte senden",
    value_high: "oberes Ende des Bereichs",
    value_low: "unteres Ende des Bereichs",
    value_about: "nur zu „{option}“: {answer}",
    value_marked: "markiert: {options}",
    value_none: "keine",
    value_one_of: "eine von: {options}",
    value_coded: "ein codierter Wert ({value})",
    how_numeric:
      "Eine Zahl wird nur als „oben“ oder „unten“ gesendet, zufällig so gewählt, dass der Durchschnitt über viele Menschen stimmt.",
    how_sampled:
      "Bei dieser Frage wird nur eine zufällig gewählte Option gemeldet, als verrauschtes Ja oder Nein.",
    how_noise:
      "Dieser Wert wurde zufällig um Ihre Antwort herum gezogen: Für sich allein sagt er wenig darüber aus.",
    epsilon_title: "Was ε (Privatsphäre-Verlust) bedeutet",
    epsilon_1:
      "Bevor Ihre Antworten Ihr Gerät verlassen, werden sie zufällig verändert: Jede Antwort wird manchmal durch eine zufällige ersetzt. Wer liest, was gesendet wurde, kann nicht wissen, was Sie geantwortet haben; Summen über viele Menschen lassen sich trotzdem schätzen.",
    epsilon_2:
      "ε (Epsilon) gibt an, wie viel Zufall im Spiel ist. Bei ε = 1 ist jede Antwort höchstens e¹ ≈ 2,7-mal so wahrscheinlich wie jede andere, das Gesendete zu erzeugen; bei ε = 0,5 höchstens e^0,5 ≈ 1,65-mal. Je kleiner ε, desto weniger können Ihre Antworten über Sie verraten.",
    epsilon_3:
      "ε summiert sich über Fragen und Umfragen. Ihr Gerät zählt mit und lehnt eine Umfrage ab, die seine Grenzen überschreiten würde: pro Frage, pro Umfrage, pro Zeitraum und über seine gesamte Nutzungsdauer. Die Zählung bleibt auf Ihrem Gerät.",
  },
};

/** The language of `wanted` (tags, best first) that the catalogue has; English otherwise. */
export function language(wanted) {
  for (const tag of wanted) {
    const primary = String(tag ?? "")
      .toLowerCase()
      .split("-")[0];
    if (primary && Object.hasOwn(MESSAGES, primary)) return primary;
  }
  return "en";
}

/** A function giving the message `name` in `lang`, with {placeholders} filled in. */
export function translator(lang) {
  const table = MESSAGES[lang] ?? MESSAGES.en;
  return (name, values = {}) =>
    (table[name] ?? MESSAGES.en[name]).replace(/\{(\w+)\}/g, (_, key) => String(values[key]));
}
