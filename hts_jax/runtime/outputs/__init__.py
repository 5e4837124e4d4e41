"""The outputs' wing of the runtime, host side: what a run leaves behind or shows while it runs.
The controller's observers (`observers`), metrics.csv and summary.json (`reporting`,
`bookkeeping`), TensorBoard/W&B (`tracking`), videos (`video`), evaluation on separate env replicas
(`evaluation`) and checkpoints (`checkpoint`)."""
