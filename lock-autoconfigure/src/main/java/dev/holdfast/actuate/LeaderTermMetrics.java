package dev.holdfast.actuate;

import java.util.Locale;
import java.util.function.Function;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.context.ApplicationListener;

import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;

/**
 * Counts leader terms from the leadership application events: {@value #TERMS} (tags
 * {@code group}, {@code backend}) at every grant, {@value #REVOCATIONS} (tags {@code group},
 * {@code backend}, {@code reason} = {@code yielded}, {@code lost}, {@code backend_unreachable},
 * {@code shutdown}) at every revocation. Groups are few (the application names them), so the tag
 * is bounded.
 */
public class LeaderTermMetrics implements ApplicationListener<LeadershipEvent> {

	/** Counter of terms granted to this instance. */
	public static final String TERMS = "holdfast.leader.terms";

	/** Counter of this instance's terms revoked, by reason. */
	public static final String REVOCATIONS = "holdfast.leader.revocations";

	private final MeterRegistry registry;

	private final Function<Leadership, String> backends;

	public LeaderTermMetrics(MeterRegistry registry, String backend) {
		this(registry, (leadership) -> backend);
	}

	/**
	 * @param backends the name of the backend a group is elected on, for the {@code backend} tag
	 */
	public LeaderTermMetrics(MeterRegistry registry, Function<Leadership, String> backends) {
		this.registry = registry;
		this.backends = backends;
	}

	@Override
	public void onApplicationEvent(LeadershipEvent event) {
		if (event instanceof LeadershipGrantedEvent) {
			Counter.builder(TERMS)
				.description("Terms of leadership granted to this instance")
				.tag("group", event.getGroup())
				.tag("backend", this.backends.apply(event.getLeadership()))
				.register(this.registry)
				.increment();
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			Counter.builder(REVOCATIONS)
				.description("Terms of leadership of this instance revoked, by reason")
				.tag("group", event.getGroup())
				.tag("backend", this.backends.apply(event.getLeadership()))
				.tag("reason", reason(revoked))
				.register(this.registry)
				.increment();
		}
	}

	/** The revocation's reason as a tag value: {@code yielded}, {@code backend_unreachable}, ... */
	static String reason(LeadershipRevokedEvent revoked) {
		return revoked.getReason().name().toLowerCase(Locale.ROOT);
	}

}
