package dev.holdfast.autoconfigure;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.springframework.boot.autoconfigure.condition.ConditionMessage;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when there are backends besides the default one ({@code holdfast.backends.<name>}), and
 * names them in the condition report
 * ({@code --debug}).
 */
class OnNamedBackendsCondition extends SpringBootCondition {

	@Override
	public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
		ConditionMessage.Builder message = ConditionMessage.forCondition("Holdfast named backends");
		Map<String, HoldfastProperties.Backend> backends = Binder.get(context.getEnvironment())
			.bind(NamedBackend.PREFIX, Bindable.mapOf(String.class, HoldfastProperties.Backend.class))
			.orElse(Map.of());
		List<String> found = new ArrayList<>();
		backends.forEach((name, spec) -> found.add(name + " (" + ((spec.getBean() != null)
				? "the application's LockBackend bean '" + spec.getBean() + "'" : NamedBackend.typeName(spec)) + ")"));
		if (found.isEmpty()) {
			return ConditionOutcome.noMatch(message.didNotFind("property").items(NamedBackend.PREFIX + ".*"));
		}
		return ConditionOutcome.match(message.found("backend", "backends").items(found));
	}

}
