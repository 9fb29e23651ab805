// Two respondents' true answers to the demo survey on different paths (the second not burnt
// out, so its follow-up is not asked), shared by the client and relay tests.
export const ANSWERS = {
  burnout: true,
  commute: "Bicycle",
  tools: ["Email", "Meetings"],
  overtime: 3.5,
  burnout_cause: "Workload",
  harassment: null,
  recommend: 8,
};
export const OTHER = {
  burnout: false,
  commute: "Car",
  tools: [],
  overtime: 20,
  harassment: true,
  recommend: 0,
};
