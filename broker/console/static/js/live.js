// Polling that is cheap for the broker: each task runs, then waits its interval (never two
// of the same task at once), every task stops while the tab is hidden and runs at once
// when it is shown again, and a user's action (create, delete, produce) runs alone:
// polls finish first and resume after it, so a poll never races a change it did not see.
export class Live {
  constructor(onError) {
    this.tasks = [];
    this.blocked = 0;
    this.stopped = false;
    this.onError = onError;
    this.onVisibility = () => (document.hidden ? this.tasks.forEach((task) => clearTimeout(task.timer)) : this.kick());
    document.addEventListener("visibilitychange", this.onVisibility);
  }

  /** Run fn now and every ms milliseconds; fn may return a new interval (a history's sample interval). */
  every(ms, fn) {
    const task = { ms, fn, timer: null, running: null };
    this.tasks.push(task);
    this.run(task);
    return task;
  }

  async run(task) {
    clearTimeout(task.timer);
    if (this.stopped || this.blocked || document.hidden || task.running) return;
    task.running = (async () => {
      try {
        const next = await task.fn();
        if (typeof next === "number" && next > 0) task.ms = next;
        this.onError(task, null);
      } catch (error) {
        this.onError(task, error);
      }
    })();
    await task.running;
    task.running = null;
    if (!this.stopped && !this.blocked && !document.hidden) task.timer = setTimeout(() => this.run(task), task.ms);
  }

  kick() {
    this.tasks.forEach((task) => this.run(task));
  }

  async exclusive(action) {
    this.blocked += 1;
    this.tasks.forEach((task) => clearTimeout(task.timer));
    await Promise.allSettled(this.tasks.map((task) => task.running));
    try {
      return await action();
    } finally {
      this.blocked -= 1;
      if (!this.blocked) this.kick();
    }
  }

  stop() {
    this.stopped = true;
    this.tasks.forEach((task) => clearTimeout(task.timer));
    document.removeEventListener("visibilitychange", this.onVisibility);
  }
}
