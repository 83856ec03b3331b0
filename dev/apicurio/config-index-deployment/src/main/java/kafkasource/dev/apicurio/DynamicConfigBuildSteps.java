package kafkasource.dev.apicurio;

import java.util.ArrayList;
import java.util.List;

import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationTarget;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.DotName;
import org.jboss.jandex.Type;

import apicurio.common.app.components.config.index.DynamicPropertiesInfoRecorder;
import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.SyntheticBeanBuildItem;
import io.quarkus.arc.processor.InjectionPointInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;

/**
 * Publishes the registry's dynamic configuration properties as a bean.
 *
 * The registry injects a {@code DynamicConfigPropertyList} listing every field that is both a
 * {@code @ConfigProperty} and {@code @Dynamic} (settings an administrator may change while it runs). Only a
 * build step can see all injection points, so this one collects them when Quarkus augments the application
 * and hands the list to the runtime recorder the extension's runtime jar ships.
 */
public class DynamicConfigBuildSteps {

    private static final DotName CONFIG_PROPERTY =
            DotName.createSimple("org.eclipse.microprofile.config.inject.ConfigProperty");
    private static final DotName DYNAMIC = DotName.createSimple("io.apicurio.common.apps.config.Dynamic");

    @BuildStep
    @Record(ExecutionTime.RUNTIME_INIT)
    void dynamicConfigPropertyList(DynamicPropertiesInfoRecorder recorder, BeanDiscoveryFinishedBuildItem beans,
                                   BuildProducer<SyntheticBeanBuildItem> syntheticBeans) throws ClassNotFoundException {
        List<DynamicConfigPropertyDef> properties = new ArrayList<>();
        for (InjectionPointInfo point : beans.getInjectionPoints()) {
            AnnotationInstance config = point.getRequiredQualifier(CONFIG_PROPERTY);
            if (config == null || point.getTarget().kind() != AnnotationTarget.Kind.FIELD) {
                continue;
            }
            AnnotationInstance dynamic = point.getTarget().asField().annotation(DYNAMIC);
            if (dynamic == null) {
                continue;
            }
            properties.add(definition(config, dynamic, point.getRequiredType()));
        }
        syntheticBeans.produce(SyntheticBeanBuildItem.configure(DynamicConfigPropertyList.class)
                .runtimeValue(recorder.initializePropertiesInfo(properties))
                .unremovable()
                .setRuntimeInit()
                .done());
    }

    /** A dynamic property is injected as a Supplier of its value: the supplied type is the property's type. */
    private static DynamicConfigPropertyDef definition(AnnotationInstance config, AnnotationInstance dynamic,
                                                       Type injected) throws ClassNotFoundException {
        if (injected.kind() != Type.Kind.PARAMETERIZED_TYPE) {
            throw new IllegalStateException("@Dynamic property " + config.value("name").asString()
                    + " is injected as " + injected + ", not as a Supplier of its value");
        }
        Type valueType = injected.asParameterizedType().arguments().get(0);
        AnnotationValue defaultValue = config.value("defaultValue");
        DynamicConfigPropertyDef definition = new DynamicConfigPropertyDef(
                config.value("name").asString(),
                Class.forName(valueType.name().toString()),
                defaultValue == null ? null : defaultValue.asString());
        AnnotationValue label = dynamic.value("label");
        AnnotationValue description = dynamic.value("description");
        AnnotationValue requires = dynamic.value("requires");
        if (label != null) {
            definition.setLabel(label.asString());
        }
        if (description != null) {
            definition.setDescription(description.asString());
        }
        if (requires != null) {
            definition.setRequires(requires.asStringArray());
        }
        return definition;
    }
}
