package dev.holdfast.sample;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/**
 * The {@code job_run} table: one row per run of a scheduled job, with the nominal time of the
 * tick it ran for and the instance that ran it.
 */
@Repository
public class JobRuns {

	private final JdbcTemplate jdbc;

	public JobRuns(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	/**
	 * Records that {@code instance} ran {@code job} for the tick whose nominal fire time is
	 * {@code tick}.
	 */
	public void record(String job, Instant tick, String instance) {
		this.jdbc.update("INSERT INTO job_run (job, tick, instance_id, started_at) VALUES (?, ?, ?, ?)", job,
				tick.toEpochMilli(), instance, System.currentTimeMillis());
	}

	/**
	 * Runs of {@code job} grouped by tick, oldest first.
	 */
	public List<TickRuns> runsPerTick(String job) {
		Map<Long, List<String>> byTick = new LinkedHashMap<>();
		this.jdbc.query("SELECT tick, instance_id FROM job_run WHERE job = ? ORDER BY tick, id",
				(rs) -> {
					byTick.computeIfAbsent(rs.getLong(1), (tick) -> new ArrayList<>()).add(rs.getString(2));
				}, job);
		List<TickRuns> result = new ArrayList<>();
		byTick.forEach((tick, instances) -> result
			.add(new TickRuns(Instant.ofEpochMilli(tick), instances.size(), List.copyOf(instances))));
		return result;
	}

	/**
	 * The runs of one tick.
	 *
	 * @param tick the nominal fire time
	 * @param runs how many instances ran it (1 when the guarantee holds)
	 * @param instances who ran it, in the order the runs were recorded
	 */
	public record TickRuns(Instant tick, long runs, List<String> instances) {
	}

}
