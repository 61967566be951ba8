package dev.holdfast.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;

/**
 * The annotation-overhead calls again, timed in CPU time of the calling thread instead of wall
 * time. Time the thread spends descheduled, which other jobs on a loaded 2-core machine make
 * large and erratic, does not count; for code that never blocks (the memory backend) what is left
 * is the code's own cost. Best of several rounds after a long warmup.
 */
final class CpuTimeProbe {

	private static volatile Object sink;

	private CpuTimeProbe() {
	}

	/** Best CPU nanoseconds per call, by benchmark name (as in {@link AnnotationOverheadBenchmark}). */
	static Map<String, Double> run(boolean quick) {
		DefaultLockTemplate template = HoldfastClients.template(new InMemoryLockBackend());
		HoldfastClients.LockedService service = HoldfastClients.proxy(template);
		String key = "order-42";
		Map<String, Supplier<Object>> calls = new LinkedHashMap<>();
		calls.put("template", () -> template.executeLocked("bench", null, HoldfastClients.ONE_ATTEMPT, () -> key));
		calls.put("annotation", service::fixed);
		calls.put("templateWithKey", () -> template.executeLocked("bench", key, HoldfastClients.ONE_ATTEMPT, () -> key));
		calls.put("annotationWithKey", () -> service.run(key));
		int batch = quick ? 20_000 : 100_000;
		int rounds = quick ? 3 : 7;
		ThreadMXBean threads = ManagementFactory.getThreadMXBean();
		Map<String, Double> best = new LinkedHashMap<>();
		try {
			for (int warm = 0; warm < 3; warm++) {
				for (Supplier<Object> call : calls.values()) {
					loop(call, batch);
				}
			}
			for (int round = 0; round < rounds; round++) {
				for (Map.Entry<String, Supplier<Object>> entry : calls.entrySet()) {
					long start = threads.getCurrentThreadCpuTime();
					loop(entry.getValue(), batch);
					double perCall = (threads.getCurrentThreadCpuTime() - start) / (double) batch;
					best.merge(entry.getKey(), perCall, Math::min);
				}
			}
		}
		finally {
			template.close();
		}
		return best;
	}

	private static void loop(Supplier<Object> call, int count) {
		Object last = null;
		for (int i = 0; i < count; i++) {
			last = call.get();
		}
		sink = last;
	}

}
